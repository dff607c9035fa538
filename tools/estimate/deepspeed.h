#pragma once
/// \file deepspeed.h
/// DeepSpeed's own estimators beside the paper's formulas: one row of them for a Ψ on N GPUs, its JSON,
/// its table cells and their headers.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/estimate.h"
#include "tools/estimate/format.h"

namespace minitorch::estimate {

/// The DeepSpeed columns to show: ZeRO-2's, ZeRO-3's (only with a largest layer: never L = 0).
struct DeepSpeedColumns {
  bool zero2 = false, zero3 = false;
};

/// What DeepSpeed's estimators are asked, the same for every row of one invocation.
struct DeepSpeedSetup {
  std::optional<int> gpus_per_node;
  std::optional<std::int64_t> largest_layer;
  runtime::Offload offload = runtime::Offload::none;
  DeepSpeedColumns columns;
  runtime::DeepSpeedOptions options;
};

/// DeepSpeed's estimates for one Ψ on N GPUs.
struct DeepSpeedRow {
  DeepSpeedSetup setup;
  runtime::DeepSpeedTopology topology;
  std::optional<runtime::DeepSpeedEstimate> zero2;  ///< none while shown: offload_param needs stage 3
  std::optional<double> zero2_before_v0_14_3;       ///< without offload only
  std::optional<runtime::DeepSpeedEstimate> zero3;
};

/// Throws ConfigError when an estimate does not fit 64-bit bytes (format.h, check_bytes): naming
/// --buffer-factor when the estimate would fit without it, else `inputs`.
DeepSpeedRow deepspeed_row(double psi, int world, const DeepSpeedSetup& setup, const Inputs& inputs);
/// Exact bytes, and GiB beside them.
json deepspeed_json(const DeepSpeedRow& row);
/// The topology, then the estimates in GiB, as deepspeed_headers names them.
std::vector<std::string> deepspeed_cells(const DeepSpeedRow& row);
/// The headers of deepspeed_cells, two lines each (name, formula).
std::vector<std::pair<std::string, std::string>> deepspeed_headers(const DeepSpeedSetup& setup);

}  // namespace minitorch::estimate
