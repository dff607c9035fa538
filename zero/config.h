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

/// `offload_optimizer` / `offload_param`.
struct OffloadConfig {
  std::string device = "none";     ///< "none" or "cpu" (DeepSpeed's "nvme" is not implemented yet)
  bool pin_memory = false;         ///< DeepSpeed's default (page-locked host buffers on a GPU; nothing to lock on sim)
  double ratio = 1.0;              ///< offload_optimizer: the share offloaded; < 1 (partial) only at stage 3
  bool enabled() const { return device == "cpu"; }
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
  OffloadConfig offload_param;                        ///< stage 3 only
};

/// Everything a strategy (zero/strategy.h) reads: the ZeRO section and AdamW's settings (lr, betas, eps,
/// weight decay; nanoGPT's decay groups are applied by the strategy). runtime::Config::strategy() makes one.
struct StrategyConfig {
  ZeroConfig zero;
  optim::AdamWOptions adamw;
};

}  // namespace minitorch::zero
