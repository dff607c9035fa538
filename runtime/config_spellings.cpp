/// \file config_spellings.cpp
#include "runtime/config_spellings.h"

#include "minitorch/json_limits.h"
#include "runtime/config_error.h"
#include "runtime/config_keys.h"
#include "runtime/config_reader.h"

namespace minitorch::runtime {

using nlohmann::json;

namespace {

struct Mapper {
  const std::string& source;
  std::vector<std::string>& warnings;

  [[noreturn]] void fail(const std::string& message) const { throw ConfigError(source + ": " + message); }

  /// `old_name` and `name` in `obj` are one key: `old_name` is renamed to `name`; both present must agree.
  void merge_synonym(json& obj, const std::string& section, const std::string& old_name, const std::string& name,
                     const std::string& why) {
    if (!obj.contains(old_name)) return;
    const std::string prefix = section.empty() ? "" : section + ".";
    if (obj.contains(name)) {
      if (obj[old_name] != obj[name])
        fail(prefix + old_name + " (" + json_excerpt(obj[old_name]) + ") and " + prefix + name + " (" + json_excerpt(obj[name]) +
             ") are one key spelled twice, with different values; DeepSpeed would use one and ignore the other without a "
             "word: keep one of them");
      warnings.push_back(prefix + old_name + " and " + prefix + name + " are one key (" + why + "), given twice with the same "
                         "value: remove " + prefix + old_name);
    }
    else obj[name] = obj[old_name];
    obj.erase(old_name);
  }

  /// DeepSpeedConfigModel's handling of "auto" and of None, in a pydantic section.
  void drop_auto_and_none(json& obj, const std::string& section) {
    for (auto it = obj.begin(); it != obj.end();) {
      const std::string path = section + "." + it.key();
      const ConfigKey* k = find_config_key(path);
      if (it.value() == "auto") {
        warnings.push_back(path + " is \"auto\" (Hugging Face's placeholder, filled in by its Trainer): dropped, as DeepSpeed "
                           "drops it, so the default applies" +
                           (k && k->is_deepspeed() ? " (" + std::string(k->deepspeed_default) + ")" : std::string()));
        it = obj.erase(it);
      } else if (it.value().is_null() && k && k->deepspeed_default == "null") {
        it = obj.erase(it);  // Optional[...] = None: the same as absent
      } else {
        ++it;
      }
    }
  }

  /// A deprecated boolean field of zero_optimization (DeepSpeed's Optional[bool] with new_param).
  void deprecated_offload_flag(json& zero, const std::string& old_name, const std::string& new_name) {
    if (!zero.contains(old_name)) return;
    const std::string path = "zero_optimization." + old_name;
    const std::optional<json> flag = coerce_value(zero[old_name], ValueType::boolean, true);
    if (!flag) fail(path + " must be a boolean, got " + json_excerpt(zero[old_name]));
    warnings.push_back("Config parameter " + path + " is deprecated use zero_optimization." + new_name + " instead" +
                       (new_name.find(' ') == std::string::npos
                            ? std::string(flag->get<bool>() ? " (read as \"" + new_name + "\": {\"device\": \"cpu\"})"
                                                            : " (false: read as no " + new_name + ")")
                            : std::string(" (it has no effect)")));
    if (new_name.find(' ') == std::string::npos) {  // cpu_offload_use_pin_memory names two keys and sets neither
      if (zero.contains(new_name))
        fail("Cannot provide deprecated parameter '" + old_name + "' and replacing parameter '" + new_name +
             "' together (zero_optimization): keep " + new_name);
      if (flag->get<bool>()) zero[new_name] = json{{"device", "cpu"}};
    }
    zero.erase(old_name);
  }
};

}  // namespace

void apply_deepspeed_spellings(json& top, const std::string& source, std::vector<std::string>& warnings) {
  Mapper m{source, warnings};
  // bf16's old name (runtime/precision_config.py: get_bfloat16_config).
  if (top.contains("bfloat16")) {
    if (!top.contains("bf16"))
      warnings.push_back("bfloat16 is deprecated, DeepSpeed's old name of bf16: read as bf16");
    m.merge_synonym(top, "", "bfloat16", "bf16", "bfloat16 is DeepSpeed's old name of bf16");
  }
  // The boolean zero_optimization (zero/config.py: read_zero_config_deprecated).
  if (top.contains("zero_optimization") && top["zero_optimization"].is_boolean()) {
    const bool on = top["zero_optimization"].get<bool>();
    json zero = {{"stage", on ? 1 : 0}};
    if (on) zero["allgather_bucket_size"] = top.contains("allgather_size") ? top["allgather_size"] : json(500000000);
    top.erase("allgather_size");  // read here: no "has no effect" warning
    warnings.push_back(std::string("DeepSpeedConfig: this format of ZeRO optimization setup is deprecated (\"zero_optimization\": ") +
                       (on ? "true" : "false") + " is read as " + zero.dump() +
                       "). Please use the format {\"zero_optimization\": {\"stage\": N, ...}}");
    top["zero_optimization"] = zero;
  }
  for (const char* section : {"bf16", "fp16"})
    if (top.contains(section) && top[section].is_object()) m.drop_auto_and_none(top[section], section);
  if (!top.contains("zero_optimization") || !top["zero_optimization"].is_object()) return;
  json& zero = top["zero_optimization"];
  m.drop_auto_and_none(zero, "zero_optimization");
  for (const ConfigKey& k : config_keys()) {
    if (k.alias.empty() || !k.path.starts_with("zero_optimization.")) continue;
    const std::string name(k.path.substr(std::string_view("zero_optimization.").size()));
    m.merge_synonym(zero, "zero_optimization", std::string(k.alias), name,
                    "DeepSpeed's field " + std::string(k.alias) + " has the alias " + name);
  }
  m.deprecated_offload_flag(zero, "cpu_offload", "offload_optimizer");
  m.deprecated_offload_flag(zero, "cpu_offload_param", "offload_param");
  m.deprecated_offload_flag(zero, "cpu_offload_use_pin_memory", "offload_param or zero_optimization.offload_optimizer");
  if (zero.contains("stage3_gather_fp16_weights_on_model_save")) {
    const std::string new_name = "stage3_gather_16bit_weights_on_model_save";
    warnings.push_back("Config parameter zero_optimization.stage3_gather_fp16_weights_on_model_save is deprecated use "
                       "zero_optimization." + new_name + " instead");
    if (zero.contains(new_name))
      m.fail("Cannot provide deprecated parameter 'stage3_gather_fp16_weights_on_model_save' and replacing parameter '" +
             new_name + "' together (zero_optimization): keep " + new_name);
    zero[new_name] = zero["stage3_gather_fp16_weights_on_model_save"];
    zero.erase("stage3_gather_fp16_weights_on_model_save");
  }
  for (const char* sub : {"offload_optimizer", "offload_param"})
    if (zero.contains(sub) && zero[sub].is_object()) m.drop_auto_and_none(zero[sub], std::string("zero_optimization.") + sub);
}

}  // namespace minitorch::runtime
