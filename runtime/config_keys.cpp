/// \file config_keys.cpp
/// What the key table says and how it judges a key: the table's rows are in config_keys_*.cpp, by section
/// (runtime/config_key_rows.h).
#include "runtime/config_keys.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "minitorch/json_limits.h"
#include "runtime/config_key_rows.h"

namespace minitorch::runtime {

namespace {

using S = KeyStatus;
using key_rows::kStagePath;

/// ZeRO stage -> status. The ZeRO issues flip stages 1, 2, 3 to implemented here as they land.
constexpr KeyStatus kZeroStageStatus[] = {S::implemented, S::implemented, S::implemented, S::implemented};

/// `value` leaves the feature off: equal to `off`, or (object `off`) each member of `off` absent or equal.
bool is_off(const nlohmann::json& value, const nlohmann::json& off) {
  if (!off.is_object() || !value.is_object()) return value == off;
  for (auto it = off.begin(); it != off.end(); ++it)
    if (value.contains(it.key()) && value[it.key()] != it.value()) return false;
  return true;
}

}  // namespace

std::string_view status_name(KeyStatus s) {
  switch (s) {
    case S::implemented: return "implemented";
    case S::warning: return "warning";
    case S::error: return "error";
    case S::deprecated: return "deprecated";
  }
  return "?";
}

std::string_view type_name(ValueType t) {
  switch (t) {
    case ValueType::boolean: return "boolean";
    case ValueType::integer: return "integer";
    case ValueType::number: return "number";
    case ValueType::string: return "string";
    case ValueType::object: return "object";
    case ValueType::array: return "array";
    case ValueType::any: return "any";
  }
  return "?";
}

ValueType ConfigKey::value_type() const {
  if (typed) return declared;
  const nlohmann::json e = nlohmann::json::parse(example);
  if (e.is_boolean()) return ValueType::boolean;
  if (e.is_number_integer()) return ValueType::integer;
  if (e.is_number()) return ValueType::number;
  if (e.is_string()) return ValueType::string;
  if (e.is_object()) return ValueType::object;
  if (e.is_array()) return ValueType::array;
  return ValueType::any;
}

std::string ConfigKey::describe_type() const {
  auto num = [](double v) { return nlohmann::json(v == static_cast<double>(static_cast<long long>(v)) ? nlohmann::json(static_cast<long long>(v)) : nlohmann::json(v)).dump(); };
  std::string out(type_name(value_type()));
  if (lo > -kUnbounded && hi < kUnbounded) out += " in [" + num(lo) + ", " + num(hi) + "]";
  else if (lo > -kUnbounded) out += (lo_open ? " > " : " ≥ ") + num(lo);
  if (deepspeed_default == "null" && status != S::deprecated) out += ", or null";
  return out;
}

bool is_pydantic_section(std::string_view section) {
  return section == "zero_optimization" || section == "zero_optimization.offload_optimizer" ||
         section == "zero_optimization.offload_param" || section == "bf16" || section == "fp16";
}

std::span<const ConfigKey> config_keys() {
  static const std::vector<ConfigKey> table = [] {
    std::vector<ConfigKey> all;
    for (std::span<const ConfigKey> section :
         {key_rows::top_level_rows(), key_rows::precision_rows(), key_rows::zero_optimization_rows(),
          key_rows::optimizer_and_scheduler_rows(), key_rows::minitorch_rows()})
      all.insert(all.end(), section.begin(), section.end());
    return all;
  }();
  return table;
}

const ConfigKey* find_config_key(std::string_view path) {
  for (const ConfigKey& k : config_keys())
    if (k.path == path) return &k;
  return nullptr;
}

KeyStatus zero_stage_status(int stage) {
  if (stage < 0 || stage > 3) throw std::out_of_range("ZeRO stage " + std::to_string(stage) + " (valid: 0-3)");
  return kZeroStageStatus[stage];
}

std::string describe_stages(StageMask stages) {
  std::vector<std::string> s;
  for (int i = 0; i < 4; ++i)
    if (stages & stage_bit(i)) s.push_back(std::to_string(i));
  if (s.size() == 1) return "stage " + s[0];
  std::string out = "stages ";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i == 0 ? "" : i + 1 == s.size() ? " and " : ", ") + s[i];
  return out;
}

KeyVerdict judge_config_key(const ConfigKey& key, const nlohmann::json& value, int zero_stage,
                            const nlohmann::json* written) {
  const std::string path(key.path);
  if (key.path == kStagePath) {
    (void)value;
    const int s = zero_stage;  // the parsed stage (a pydantic section: "2" is 2)
    if (zero_stage_status(s) == S::implemented) return {};
    return {S::error, "ZeRO stage " + std::to_string(s) + " is not implemented yet (" + path + " is " +
                          std::to_string(s) + "); stages 0 (DDP), 1 (sharded optimizer states) and 2 (+ sharded gradients) are what run "
                          "today, on any number of ranks: set \"stage\": 2"};
  }
  if (!(key.stages & stage_bit(zero_stage)))
    return {S::warning, path + " only affects ZeRO " + describe_stages(key.stages) + " and this config runs stage " +
                            std::to_string(zero_stage) + ": accepted, as DeepSpeed does, but it has no effect here"};
  switch (key.status) {
    case S::implemented:
      return {};
    case S::warning:
      return {S::warning, path + " is accepted but has no effect here: " + std::string(key.note) +
                              (key.deepspeed_does.empty() ? std::string() : " (DeepSpeed: " + std::string(key.deepspeed_does) + ")")};
    case S::error:
      if (!key.off.empty() && is_off(value, nlohmann::json::parse(key.off))) return {};
      return {S::error, std::string(key.feature) + " is not implemented yet (" + path + " is " +
                            json_excerpt(written ? *written : value) + "); " +
                            std::string(key.note)};
    case S::deprecated:  // runtime/config_spellings.cpp maps these before any section is read
      return {S::warning, "Config parameter " + path + " is deprecated use " + std::string(key.note) + " instead"};
  }
  return {};
}

}  // namespace minitorch::runtime
