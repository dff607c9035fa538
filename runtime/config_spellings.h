#pragma once
/// \file config_spellings.h
/// DeepSpeed's other spellings of its keys, mapped before the sections are read, the way DeepSpeed's own
/// config code maps them (docs/config.md, "Other spellings"):
/// - `"bfloat16"`: the old name of `"bf16"` (DeepSpeed reads it when `bf16` is absent);
/// - `"zero_optimization": true | false`: the old boolean form, read as `{"stage": 1}` / `{"stage": 0}`
///   (with the top-level `allgather_size` as `allgather_bucket_size` at stage 1), with DeepSpeed's warning;
/// - the pydantic aliases of `zero_optimization` (`prefetch_bucket_size` = `stage3_prefetch_bucket_size`, ...;
///   the table's `ConfigKey::alias`): read as the table's name, silently, as DeepSpeed does;
/// - deprecated fields (the table's `KeyStatus::deprecated`): `cpu_offload: true` → `offload_optimizer:
///   {"device": "cpu"}`, `cpu_offload_param: true` → `offload_param: {"device": "cpu"}`,
///   `stage3_gather_fp16_weights_on_model_save` → `stage3_gather_16bit_weights_on_model_save`,
///   `cpu_offload_use_pin_memory` (no longer has an effect), each with DeepSpeed's deprecation warning;
/// - in DeepSpeed's pydantic sections: a value `"auto"` (Hugging Face's placeholder) is dropped, so the
///   default applies, as DeepSpeedConfigModel does (with a warning here), and a null where DeepSpeed's
///   default is None counts as absent.
///
/// Two spellings of one key in one config: DeepSpeed's error for a deprecated field beside its new name;
/// for `bf16` / `bfloat16` and an alias beside its name, an error when the two values differ (DeepSpeed
/// would take one of them silently) and one warning when they agree.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace minitorch::runtime {

/// Rewrites `top` (a whole config) in place as above; warnings are appended to `warnings`; an
/// inconsistent pair throws ConfigError "<source>: ...".
void apply_deepspeed_spellings(nlohmann::json& top, const std::string& source, std::vector<std::string>& warnings);

}  // namespace minitorch::runtime
