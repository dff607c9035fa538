#pragma once
/// \file format.h
/// The cells of minitorch-estimate's tables and the pieces of its JSON, shared by the --params and the
/// --config output.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/estimate.h"
#include "zero/strategy.h"

namespace minitorch::estimate {

using json = nlohmann::ordered_json;

/// The paper's unit: 1e9 bytes (DeepSpeed's "GB" is a GiB, runtime::kGiB).
inline constexpr double kGB = 1e9;
inline constexpr const char* kStageName[4] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
inline constexpr const char* kPaperName[4] = {"DP baseline", "P_os", "P_os+g", "P_os+g+p"};

/// Whether `stage` is among the stages asked (--stage, or all four).
bool asks_stage(const std::vector<int>& stages, int stage);

/// "DDP (stage 0)", "ZeRO-1", ...: a stage's name in a table's first column or header.
std::string stage_label(int stage);

/// Up to 6 significant digits of GB, never an exponent: 31.4062, 1.875, 4187.5, 16000, 1536000.
std::string gb(double bytes);
/// 3300352 -> "3,300,352" (v >= 0).
std::string commas(std::int64_t v);
/// "3" for one rank, "0-3" for a run of them.
std::string rank_span(int first, int last);
/// `s` and one space, padded to `width` screen columns on the left (right = false) or the right.
std::string pad(const std::string& s, std::size_t width, bool right = false);
/// A table line without the padding after its last cell.
void print_line(std::string line);

std::string offload_name(runtime::Offload o);
/// "none", "optimizer", "all": --nvme's values.
std::string nvme_name(runtime::OnNvme n);

/// What an estimate was asked for, to name in an error: `what` the inputs ("--params 1T with --ranks 4"),
/// `lever` what to lower ("--params or --ranks").
struct Inputs {
  std::string what, lever;
};
/// Refuses a number of bytes that is not finite or not below 2^63 (a 64-bit count cannot hold it, and its
/// GiB would be rounded nonsense): ConfigError "<inputs.what>: <estimate> would be <bytes> bytes, ...;
/// lower <inputs.lever>".
void check_bytes(double bytes, const Inputs& inputs, const std::string& estimate);
/// True when `bytes` is finite and below 2^63.
bool fits_int64(double bytes);

json bytes_json(const runtime::ModelStateEstimate& e);
json bytes_json(const zero::ModelStateBytes& b);
/// Whole bytes as a JSON integer while they fit (always, for Ψ up to 10^17).
json exact_bytes(double v);

}  // namespace minitorch::estimate
