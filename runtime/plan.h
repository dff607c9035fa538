#pragma once
/// \file plan.h
/// What a run will do, decided once (docs/design.md, "One plan"). The config says what is asked; the plan
/// says what runs, after the rules that bend one into the other on this many ranks and this device:
///
///   Config (JSON) ─┐
///   --device, ...  ├─▶ make_plan() ─▶ Plan ─▶ make_strategy, the memory pre-check, the trainer,
///   world size    ─┘   (pure: no        │      the report, the step trace, the estimator, the lessons
///                       device touched)  └─▶ setup_device(plan): the device made ready (sim's capacity, a GPU)
///
/// Every reader takes its answer from here and derives none of it again: the stage that runs on one rank
/// (effective_zero_stage is the one place that rule is written), where the optimizer states live, the
/// device and its capacity, the precision, the data × pipeline × tensor grid, the batch split and the kind
/// of save. What the run does otherwise than its config says is a warning in `warnings`, printed once.
///
/// \code
///   runtime::Config cfg = runtime::Config::from_file("configs/zero2.json", world.size());
///   runtime::Plan plan = runtime::make_plan(cfg, {.device = "sim", .device_memory = "24MiB"});
///   for (const auto& w : plan.warnings) tools::warn(w);           // once, on rank 0
///   runtime::setup_device(plan);                                   // sim: the 24 MiB capacity is set
///   auto engine = runtime::initialize(model, cfg, plan, &world);   // moves the model to plan.device
/// \endcode
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "minitorch/device.h"
#include "nn/gpt_config.h"
#include "runtime/config.h"
#include "runtime/formulas.h"
#include "runtime/save_target.h"

namespace minitorch::runtime {

/// The ranks as a grid: world = data × pipeline × tensor (dist/grid.h orders them).
struct RankGrid {
  int world = 1, data = 1, pipeline = 1, tensor = 1;
};

/// Training precision: f32, or 16-bit parameters and gradients with f32 master weights.
enum class Precision { f32, bf16, f16 };
/// "f32", "bf16", "f16": the run report's and the trace's `dtype`.
const char* precision_name(Precision p);

/// What a run will do (see the file comment). Plain data: copy it, print it, compare it.
struct Plan {
  int config_zero_stage = 0;  ///< zero_optimization.stage as written
  int zero_stage = 0;         ///< the stage that runs (effective_zero_stage)
  /// ZeRO-Offload runs: the optimizer states on the host. Only at stages 1–3 (the config refuses it at stage 0,
  /// and the one-rank rule keeps the stage when it is on), so zero_stage > 0 whenever it is true.
  bool offload_optimizer = false;
  /// ZeRO-Infinity's offload_param: stage 3's parameter shards on the host (the config requires stage 3 and
  /// offload_optimizer with it).
  bool offload_param = false;
  /// Colossal-AI's Gemini (`gemini`): ZeRO-3 on chunks with its own placement (the config requires stage 3 and no
  /// offload section with it); it runs on one rank too.
  bool gemini = false;
  /// `device.type` or --device as given ("cpu", "sim", "cuda", "cuda:1"); `device` is that device, with a
  /// "cuda" rank's GPU filled in by setup_device (local rank).
  std::string device_name = "cpu";
  Device device = Device::cpu();
  std::int64_t device_capacity = 0;  ///< sim's capacity in bytes (0: no limit)
  std::int64_t link_bandwidth = 0;   ///< sim's host↔device link, bytes per second (0: instant copies)
  Precision precision = Precision::f32;
  BytesPerParameter bytes{4, 4, 8};  ///< P, G, K of `precision`
  RankGrid grid;
  std::int64_t micro_batch = 1, accumulation = 1, global_batch = 1;  ///< global = micro × accumulation × data
  bool activation_checkpointing = false;
  SaveKind save_kind = SaveKind::single_file;  ///< a directory of shards when each rank holds a part
  std::vector<std::string> warnings;  ///< what runs otherwise than the config says, one line each

  bool pipelined() const { return grid.pipeline > 1; }
  /// Each block's matrices split over grid.tensor ranks (tp/): the model is a tp::TensorParallelGPT.
  bool tensor_parallel() const { return grid.tensor > 1; }
  bool sharded_save() const { return save_kind == SaveKind::sharded; }
  /// One line: "ZeRO stage 2 on 4 ranks (data 4 × pipeline 1), bf16, sim (24.00 MiB), micro 4 × accumulation 2".
  std::string describe() const;
};

/// The one-rank rule, written once: ZeRO shards the model states over the data-parallel ranks, and on one
/// rank the shard is the whole model, so stages 1–3 on one data-parallel rank run as single-rank training
/// (stage 0) — except with offload_optimizer, which needs the sharded optimizer even when its shard is
/// everything (DeepSpeed runs the stage too).
int effective_zero_stage(int config_stage, int data_parallel_size, bool offload_optimizer);

/// The command line's say over the plan (nullopt: the config's).
struct PlanOverrides {
  std::optional<std::string> device;         ///< --device: cpu, sim, cuda, cuda:N
  std::optional<std::string> device_memory;  ///< --device-memory: sim's capacity, "24MiB" or bytes
};

/// The plan of `config` (read for its world size: Config::from_file(path, world)) with the overrides.
/// Touches no device. A device name that is none, a capacity that is not a size or not on sim: one
/// ConfigError naming the flag or key and what to give instead.
Plan make_plan(const Config& config, const PlanOverrides& overrides = {});

/// What the plan cannot say before the model's shapes are known, one line each: with offload_param, the tensors
/// of at most stage3_param_persistence_threshold elements that stay whole on the device (as DeepSpeed keeps its
/// persistent parameters), so that a run which offloads little or nothing says so.
std::vector<std::string> model_warnings(const Plan& plan, const Config& config, const nn::GPTConfig& model);

/// Makes the plan's device ready on this rank and returns it (also into plan.device): sim gets its
/// capacity; a GPU is chosen by local rank for "cuda" (OMPI_COMM_WORLD_LOCAL_RANK), its kernels
/// registered, and made this thread's device. A build without CUDA, no usable GPU, more ranks on a node
/// than GPUs: one ConfigError (exit status 2) that says what to do.
Device setup_device(Plan& plan);

}  // namespace minitorch::runtime
