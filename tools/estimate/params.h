#pragma once
/// \file params.h
/// minitorch-estimate --params and --table1: the ZeRO paper's formulas for any Ψ on any N, with or without
/// offload, and DeepSpeed's estimators beside them. The estimate is computed first (estimate_params);
/// params_json and print_params only present it.
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/estimate.h"
#include "tools/estimate/deepspeed.h"
#include "tools/estimate/format.h"

namespace minitorch::estimate {

inline constexpr const char* kOffloadNote =
    "(offload as minitorch runs it, docs/design.md §10: a run's report measures these bytes)";

/// The command line of the --params and --table1 modes, checked.
struct ParamsRequest {
  std::vector<std::int64_t> psis;
  std::vector<int> ranks;
  std::vector<int> stages;
  bool bf16 = true;
  runtime::Offload offload = runtime::Offload::none;
  runtime::OnNvme nvme = runtime::OnNvme::none;  ///< --nvme: which offloaded states live on NVMe
  std::optional<int> gpus_per_node;
  std::optional<std::int64_t> largest;
  runtime::DeepSpeedOptions ds_options;
  bool table1 = false;
  bool as_json = false;
};

/// One stage of one (Ψ, N): its bytes on the device and the CPU, and with --table1 the paper's cell.
struct StageCell {
  int stage = 0;
  runtime::Placement placement;  ///< placement.valid false: this offload needs another stage
  const char* paper_gb = nullptr;  ///< the paper's Table 1 as printed (--table1, stages 1-3)
  bool agrees_with_paper = true;
};

struct ParamsRow {
  std::int64_t psi = 0;
  int world = 1;
  std::vector<StageCell> cells;  ///< one per stage asked
  std::optional<DeepSpeedRow> deepspeed;  ///< when stage 2 or 3 is asked
};

struct ParamsEstimate {
  runtime::BytesPerParameter bytes;
  std::vector<runtime::Placement> formulas;  ///< one per stage asked: the formula texts of its column
  DeepSpeedSetup deepspeed;
  bool with_deepspeed = false;     ///< stage 2 or 3 asked: every row has DeepSpeed's estimates
  bool zero3_needs_layer = false;  ///< ZeRO-3 asked beside other stages without --largest-layer
  std::vector<ParamsRow> rows;     ///< Ψ by Ψ, N by N
};

/// Throws ConfigError when DeepSpeed's ZeRO-3 estimate alone is asked without the largest layer.
ParamsEstimate estimate_params(const ParamsRequest& q);
json params_json(const ParamsRequest& q, const ParamsEstimate& e);
void print_params(const ParamsRequest& q, const ParamsEstimate& e);

}  // namespace minitorch::estimate
