#pragma once
/// \file config_key_rows.h
/// How the key table (runtime/config_keys.h) is written, for the files that hold its sections:
/// config_keys_top_level.cpp (DeepSpeed's top-level keys), config_keys_precision_and_optimizer.cpp
/// (bf16, fp16, optimizer, scheduler), config_keys_zero.cpp (zero_optimization and its offload) and
/// config_keys_minitorch.cpp (pipeline, activation checkpointing and minitorch's own sections).
/// config_keys() joins the sections in docs/config.md's order.
///
/// A key that is read and used is `ok`; `noop` keys warn that they have no effect; `todo` keys are
/// features not implemented yet, an error unless set to their off value; `dep` keys are DeepSpeed's old
/// spellings. Stage sets follow DeepSpeed's engine (_configure_zero_optimizer): which ZeRO optimizer
/// receives the key.
///
/// DeepSpeed's declarations (deepspeed/runtime/zero/config.py, zero/offload_config.py, precision_config.py,
/// activation_checkpointing/config.py, runtime/config.py + constants.py, lr_schedules.py, ops/adam/fused_adam.py;
/// v0.19.5): `.ds()` is the code default as JSON ("null": Python's None), `.ge()` / `.gt()` the pydantic range,
/// `.also()` the other name pydantic accepts. A key without `.ds()` is minitorch's own.
#include <span>
#include <string_view>

#include "runtime/config_keys.h"

namespace minitorch::runtime::key_rows {

using S = KeyStatus;
using T = ValueType;

constexpr ConfigKey ok(std::string_view path, std::string_view example, std::string_view context = {}) {
  return {path, S::implemented, example, {}, {}, {}, kAllStages, context};
}
/// Implemented at `stages`; elsewhere a warning naming them.
constexpr ConfigKey ok_at(std::string_view path, std::string_view example, StageMask stages) {
  return {path, S::implemented, example, {}, {}, {}, stages, {}};
}
constexpr ConfigKey noop(std::string_view path, std::string_view example, std::string_view why,
                         StageMask stages = kAllStages, std::string_view context = {}) {
  return {path, S::warning, example, why, {}, {}, stages, context};
}
constexpr ConfigKey todo(std::string_view path, std::string_view example, std::string_view off,
                         std::string_view feature, std::string_view advice) {
  return {path, S::error, example, advice, off, feature, kAllStages, {}};
}
/// DeepSpeed's deprecated spelling of `new_name` (runtime/config_spellings.cpp maps it).
constexpr ConfigKey dep(std::string_view path, std::string_view example, std::string_view new_name) {
  return ConfigKey{path, S::deprecated, example, new_name, {}, {}, kAllStages, {}}.ds("{}");
}

/// The key whose value is the ZeRO stage (its status per stage: zero_stage_status()).
inline constexpr std::string_view kStagePath = "zero_optimization.stage";

/// Each section's rows, in docs/config.md's order.
std::span<const ConfigKey> top_level_rows();
std::span<const ConfigKey> precision_rows();
std::span<const ConfigKey> zero_optimization_rows();
std::span<const ConfigKey> optimizer_and_scheduler_rows();
std::span<const ConfigKey> minitorch_rows();

}  // namespace minitorch::runtime::key_rows
