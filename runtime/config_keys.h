#pragma once
/// \file config_keys.h
/// The one table of configuration keys: every key minitorch reads or recognises (DeepSpeed's and
/// minitorch's own `model`, `training` and `comm`), each with what minitorch does with it. The parser
/// (runtime/config.cpp through SectionReader) consults it for every key present in a config, so nothing
/// is accepted silently: a key either has its effect, or warns that it has none, or fails with
/// "... is not implemented yet" and what to do instead. docs/config.md documents the same table.
///
/// \code
///   const minitorch::runtime::ConfigKey* k = minitorch::runtime::find_config_key("zero_optimization.sub_group_size");
///   // k->status == KeyStatus::implemented, k->stages == stage_bit(3): at stages 0-2 it warns naming stage 3
/// \endcode
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>

namespace minitorch::runtime {

/// What minitorch does with a key present in a config.
enum class KeyStatus {
  implemented,  ///< the key has its effect
  warning,      ///< accepted with a warning that it has no effect here (DeepSpeed tuning, another stage)
  error,        ///< not implemented yet: a ConfigError, unless the value is the feature's "off" value
};

/// "implemented", "warning" or "error" (as docs/config.md writes the status).
std::string_view status_name(KeyStatus s);

/// Set of ZeRO stages: bit s set = stage s.
using StageMask = unsigned;
constexpr StageMask stage_bit(int s) { return 1u << s; }
constexpr StageMask kAllStages = 0b1111;

/// One configuration key.
struct ConfigKey {
  std::string_view path;         ///< dotted path: "zero_optimization.offload_optimizer.device"
  KeyStatus status;              ///< at the stages in `stages`
  std::string_view example;      ///< a valid JSON value (the table-walking test sets it)
  std::string_view note = {};    ///< warning: why it has no effect; error: what to do instead
  std::string_view off = {};     ///< error: the JSON value that leaves the feature off (then silent);
                                 ///< an object means "these members absent or equal"
  std::string_view feature = {}; ///< error: what is not implemented ("fp16 mixed precision")
  StageMask stages = kAllStages; ///< ZeRO stages the key affects (DeepSpeed's semantics); at any
                                 ///< other stage it is a warning naming these stages
  std::string_view context = {}; ///< JSON object a config needs around the key (e.g. the optimizer
                                 ///< type that makes `momentum` valid), for tests and docs
};

/// The whole table, in docs/config.md's order.
std::span<const ConfigKey> config_keys();
/// The entry for a dotted path, or nullptr.
const ConfigKey* find_config_key(std::string_view path);
/// Status of `zero_optimization.stage` = `stage` (0-3): the one place a ZeRO stage turns implemented.
KeyStatus zero_stage_status(int stage);
/// "stage 3", "stages 1 and 2", "stages 1, 2 and 3".
std::string describe_stages(StageMask stages);

/// What the table says about `key` set to `value` in a config for ZeRO stage `zero_stage`:
/// `message` is empty (implemented, or a not-implemented feature left off), a warning, or an error.
struct KeyVerdict {
  KeyStatus status = KeyStatus::implemented;
  std::string message;
};
KeyVerdict judge_config_key(const ConfigKey& key, const nlohmann::json& value, int zero_stage);

}  // namespace minitorch::runtime
