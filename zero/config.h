#pragma once
/// \file config.h
/// What a gradient strategy is built from: the values of DeepSpeed's `zero_optimization` section and the
/// optimizer's settings. Plain data; reading them from a JSON file, with every key's checks, is the runtime's
/// job (runtime/config.h, as DeepSpeed keeps `DeepSpeedZeroConfig` in deepspeed/runtime/zero/config.py and
/// reads it in runtime/config.py).
#include <cstdint>
#include <string>

#include "optim/adamw.h"

namespace minitorch::zero {

/// `offload_optimizer` / `offload_param` (DeepSpeed's DeepSpeedZeroOffloadOptimizerConfig and
/// DeepSpeedZeroOffloadParamConfig, their defaults). Which keys act where: docs/config.md.
struct OffloadConfig {
  std::string device = "none";     ///< "none", "cpu" or "nvme" (ZeRO-Infinity: files under nvme_path)
  std::string nvme_path;           ///< the folder of the swap files (device "nvme"); empty: not given
  bool pin_memory = true;          ///< DeepSpeed's default since PR #8207; page-locked host buffers matter only
                                   ///< for a GPU's DMA, and minitorch offloads on sim and cpu (a warning says so)
  double ratio = 1.0;              ///< offload_optimizer: the share offloaded; < 1 (partial) only at stage 3
  bool pipeline_read = false;      ///< offload_optimizer "nvme": the next tile's read overlaps the update
  bool pipeline_write = false;     ///< offload_optimizer "nvme": the last tile's write overlaps the update
  std::int64_t buffer_count = 0;   ///< DeepSpeed: 4 (optimizer), 5 (param); set by the parser
  std::int64_t buffer_size = 100'000'000;  ///< offload_param: elements per swap buffer
  std::int64_t max_in_cpu = 1'000'000'000; ///< offload_param "nvme": elements kept in host memory
  bool enabled() const { return device != "none"; }
  bool on_nvme() const { return device == "nvme"; }
};

/// DeepSpeed's top-level `aio` section, with its defaults (deepspeed/runtime/swap_tensor/aio_config.py).
/// minitorch's swap (zero/nvme_store.h) is synchronous pread/pwrite and uses two of its keys; the other four
/// tune libaio / GPUDirect submission, which minitorch does not have (the config's warnings say so).
struct AioConfig {
  std::int64_t block_size = 1048576;  ///< bytes per pread/pwrite request: a positive multiple of 4096
  int queue_depth = 8;                ///< not used
  int intra_op_parallelism = 1;       ///< threads per read()/write() (DeepSpeed's older name: thread_count)
  bool single_submit = false;         ///< not used
  bool overlap_events = true;         ///< not used
  bool use_gds = false;               ///< not used
};

/// `zero_optimization`. Sizes count elements, not bytes (DeepSpeed's code).
struct ZeroConfig {
  int stage = 0;                                      ///< 0 DDP, 1 optimizer states, 2 + grads, 3 + params
  std::int64_t reduce_bucket_size = 500'000'000;
  std::int64_t allgather_bucket_size = 500'000'000;
  std::int64_t stage3_prefetch_bucket_size = 50'000'000;
  std::int64_t stage3_param_persistence_threshold = 100'000;
  std::int64_t sub_group_size = 1'000'000'000;        ///< tiles the ZeRO-3 optimizer step
  bool overlap_comm = false;                          ///< resolved: unset means (stage == 3)
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  bool allgather_partitions = true;
  OffloadConfig offload_optimizer;                    ///< stages 1-3
  OffloadConfig offload_param;                        ///< stage 3 only, with offload_optimizer
};

/// Everything a strategy (zero/strategy.h) reads: the ZeRO section and AdamW's settings (lr, betas, eps,
/// weight decay; nanoGPT's decay groups are applied by the strategy). runtime::Config::strategy() makes one.
struct StrategyConfig {
  ZeroConfig zero;
  optim::AdamWOptions adamw;
  AioConfig aio;  ///< the NVMe swap's I/O (device "nvme")
  /// Names this run's swap folder, `<nvme_path>/minitorch-swap/<swap_run_id>/` (zero/nvme_store.h); the same on
  /// every rank (the runtime's run id, runtime/run_id.h). Needed with device "nvme" only.
  std::string swap_run_id;
};

}  // namespace minitorch::zero
