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
  deprecated,   ///< DeepSpeed's old spelling: read as `note` names it, with DeepSpeed's deprecation warning
};

/// "implemented", "warning", "error" or "deprecated" (as docs/config.md writes the status).
std::string_view status_name(KeyStatus s);

/// A key's JSON type, as DeepSpeed declares it (derived from the table's example unless set).
enum class ValueType { boolean, integer, number, string, object, array, any };
std::string_view type_name(ValueType t);

/// Set of ZeRO stages: bit s set = stage s.
using StageMask = unsigned;
constexpr StageMask stage_bit(int s) { return 1u << s; }
constexpr StageMask kAllStages = 0b1111;

/// No bound (ConfigKey::lo / hi).
inline constexpr double kUnbounded = 1e308;

/// One configuration key: what minitorch does with it, and DeepSpeed's declaration of it (default,
/// type, range, other spelling), written from DeepSpeed's config classes (docs/config.md).
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
  // ---- DeepSpeed's declaration ----
  std::string_view deepspeed_default = {};  ///< JSON text of DeepSpeed's code default ("null": None);
                                            ///< empty: a minitorch key (not DeepSpeed's)
  double lo = -kUnbounded, hi = kUnbounded; ///< numeric range, inclusive unless lo_open
  bool lo_open = false;                     ///< the range is lo < value (DeepSpeed's "> 0")
  std::string_view alias = {};              ///< the other name DeepSpeed accepts (pydantic alias)
  std::string_view deepspeed_does = {};     ///< warning keys: what DeepSpeed does with it (the warning
                                            ///< and docs/config.md's meaning say it)
  bool typed = false;                       ///< `type` was set (else: the example's JSON type)
  ValueType declared = ValueType::any;

  /// DeepSpeed's default, as JSON text.
  constexpr ConfigKey ds(std::string_view json_default) const { ConfigKey k = *this; k.deepspeed_default = json_default; return k; }
  /// value >= lo (and <= hi).
  constexpr ConfigKey ge(double l, double h = kUnbounded) const { ConfigKey k = *this; k.lo = l; k.hi = h; return k; }
  /// value > lo.
  constexpr ConfigKey gt(double l) const { ConfigKey k = *this; k.lo = l; k.lo_open = true; return k; }
  constexpr ConfigKey what(std::string_view does) const { ConfigKey k = *this; k.deepspeed_does = does; return k; }
  constexpr ConfigKey also(std::string_view other_name) const { ConfigKey k = *this; k.alias = other_name; return k; }
  /// The JSON object a config needs around the key (ConfigKey::context).
  constexpr ConfigKey within(std::string_view json) const { ConfigKey k = *this; k.context = json; return k; }
  constexpr ConfigKey type(ValueType t) const { ConfigKey k = *this; k.typed = true; k.declared = t; return k; }

  bool is_deepspeed() const { return !deepspeed_default.empty(); }
  bool has_range() const { return lo > -kUnbounded || hi < kUnbounded; }
  /// The declared type, or the example's.
  ValueType value_type() const;
  /// "integer ≥ 0", "number in [0, 1]", "boolean", ... (docs/config.md's type column).
  std::string describe_type() const;
};

/// Sections DeepSpeed validates with pydantic (lax mode): there a numeric string is read as a number,
/// a whole float as an integer, 0/1 and "true"/"false" (and pydantic's other spellings) as booleans,
/// a null for an optional field as absent, and "auto" is dropped (DeepSpeedConfigModel).
bool is_pydantic_section(std::string_view section);

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
/// `value` is the value as read (in a pydantic section "1.0" is 1.0, so it is an off value 1.0);
/// `written`, when given, is how the config wrote it, which the message quotes.
struct KeyVerdict {
  KeyStatus status = KeyStatus::implemented;
  std::string message;
};
KeyVerdict judge_config_key(const ConfigKey& key, const nlohmann::json& value, int zero_stage,
                            const nlohmann::json* written = nullptr);

}  // namespace minitorch::runtime
