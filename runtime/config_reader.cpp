/// \file config_reader.cpp
#include "runtime/config_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "minitorch/json_limits.h"
#include "runtime/config_error.h"
#include "runtime/config_keys.h"

namespace minitorch::runtime {

using nlohmann::json;

namespace {
/// Unknown keys longer than this get no "did you mean" (see finish()).
constexpr std::size_t kMaxSuggestedKey = 80;
}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest_key(const std::string& key, const std::vector<std::string>& valid) {
  std::string best;
  std::size_t best_d = SIZE_MAX;
  for (const auto& v : valid) {
    std::size_t d = edit_distance(key, v);
    if (d < best_d) best_d = d, best = v;
  }
  return best;
}

std::string nearest_implemented_top_level_key(const std::string& key) {
  std::vector<std::string> ours;
  for (const ConfigKey& k : config_keys())
    if (k.status == KeyStatus::implemented && k.path.find('.') == std::string_view::npos) ours.emplace_back(k.path);
  return nearest_key(key, ours);
}

std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_near_miss(const std::string& key, const std::string& valid) {
  // Case and one or two letters: "Gradient_Clipping", "gradient_cliping", "optimiser", "fp61" is not (4 letters).
  const std::size_t allowed = std::min<std::size_t>(2, key.size() / 4);
  return edit_distance(ascii_lower(key), ascii_lower(valid)) <= allowed;
}

json parse_config_json(const std::string& text, const std::string& source) {
  // DeepSpeed loads with dict_raise_error_on_duplicate_keys; nlohmann would keep the last silently.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto track = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) open_objects.emplace_back();
    if (ev == json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    if (ev == json::parse_event_t::key && !open_objects.empty() &&
        !open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json j;
  try {
    j = parse_json_bounded(text, source, track);  // a deep value would crash the messages quoting it
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    throw ConfigError(source + ": malformed JSON: " + truncate_for_message(e.what(), 300));
  } catch (const JsonLimitError& e) {
    throw ConfigError(e.what());
  }
  if (!duplicate.empty())
    throw ConfigError(source + ": duplicate key '" + truncate_for_message(duplicate) + "' (DeepSpeed rejects it too)");
  if (!j.is_object()) throw ConfigError(source + ": the config must be a JSON object, got " + j.type_name());
  return j;
}

std::optional<json> coerce_value(const json& v, ValueType type, bool lax) {
  // A whole string: "3", " 3 " (pydantic strips), not "3x".
  auto parse_number = [](const std::string& s, bool integer) -> std::optional<json> {
    const std::size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    if (b == std::string::npos) return std::nullopt;
    const std::string t = s.substr(b, e - b + 1);
    char* end = nullptr;
    errno = 0;
    if (integer) {
      if (t.find_first_not_of("+-0123456789") != std::string::npos) return std::nullopt;
      const long long n = std::strtoll(t.c_str(), &end, 10);
      if (errno != 0 || end != t.c_str() + t.size()) return std::nullopt;
      return json(n);
    }
    const double d = std::strtod(t.c_str(), &end);
    if (errno != 0 || end != t.c_str() + t.size() || !std::isfinite(d)) return std::nullopt;
    return json(d);
  };
  switch (type) {
    case ValueType::any:
      return v;
    case ValueType::boolean:
      if (v.is_boolean()) return v;
      if (!lax) return std::nullopt;
      if (v.is_number() && (v.get<double>() == 0 || v.get<double>() == 1)) return json(v.get<double>() == 1);
      if (v.is_string()) {
        const std::string s = ascii_lower(v.get<std::string>());
        for (const char* t : {"1", "on", "t", "true", "y", "yes"})
          if (s == t) return json(true);
        for (const char* f : {"0", "off", "f", "false", "n", "no"})
          if (s == f) return json(false);
      }
      return std::nullopt;
    case ValueType::integer:
      if (v.is_number_unsigned()) {
        if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
        return json(static_cast<std::int64_t>(v.get<std::uint64_t>()));
      }
      if (v.is_number_integer()) return v;
      if (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>() && std::fabs(v.get<double>()) < 9.2e18)
        return json(static_cast<std::int64_t>(v.get<double>()));  // 5e8
      if (lax && v.is_string()) return parse_number(v.get<std::string>(), true);
      return std::nullopt;
    case ValueType::number:
      if (v.is_number()) return json(v.get<double>());
      if (lax && v.is_string()) return parse_number(v.get<std::string>(), false);
      return std::nullopt;
    case ValueType::string:
      return v.is_string() ? std::optional<json>(v) : std::nullopt;
    case ValueType::object:
      return v.is_object() ? std::optional<json>(v) : std::nullopt;
    case ValueType::array:
      return v.is_array() ? std::optional<json>(v) : std::nullopt;
  }
  return std::nullopt;
}

SectionReader::SectionReader(const json& obj, std::string name, std::string source)
    : obj_(obj), name_(std::move(name)), source_(std::move(source)), lax_(is_pydantic_section(name_)) {}

json SectionReader::checked(const std::string& key, const ConfigKey& entry, const json& v) const {
  const ValueType type = entry.value_type();
  auto expected = [&] {
    switch (type) {
      case ValueType::boolean: return std::string(lax_ ? "a boolean (true/false, 0/1 or \"true\"/\"false\")" : "a boolean (true/false)");
      case ValueType::integer: return std::string(lax_ ? "an integer (or a string of one)" : "an integer");
      case ValueType::number: return std::string(lax_ ? "a number (or a string of one)" : "a number");
      case ValueType::string: return std::string("a string");
      case ValueType::object: return std::string("an object");
      case ValueType::array: return std::string("an array");
      case ValueType::any: return std::string("anything");
    }
    return std::string();
  };
  if (type == ValueType::number && v.is_number_float() && !std::isfinite(v.get<double>()))
    fail(path(key) + " must be a finite number, got " + json_excerpt(v));
  std::optional<json> c = coerce_value(v, type, lax_);
  if (!c) fail(path(key) + " must be " + expected() + ", got " + json_excerpt(v) + " (" + v.type_name() + ")");
  if (c->is_number() && entry.has_range()) {
    const double d = c->get<double>();
    auto num = [&](double x) {  // as the key's type writes it: 1 for an integer, 1.0 for a number
      return type == ValueType::integer && std::fabs(x) < 9.2e18 ? std::to_string(static_cast<long long>(x)) : json(x).dump();
    };
    const bool low = entry.lo_open ? !(d > entry.lo) : d < entry.lo;
    if (low || d > entry.hi) {
      std::string range = entry.hi < kUnbounded ? "between " + num(entry.lo) + " and " + num(entry.hi)
                          : entry.lo_open       ? "greater than " + num(entry.lo)
                                                : "at least " + num(entry.lo);
      fail(path(key) + " must be " + range + ", got " + json_excerpt(v));
    }
  }
  return *c;
}

void SectionReader::fail(const std::string& message) const { throw ConfigError(source_ + ": " + message); }

bool SectionReader::has(const char* key) const {
  auto it = obj_.find(key);
  if (it == obj_.end()) return false;
  const ConfigKey* k = find_config_key(path(key));
  return !(it->is_null() && k && k->deepspeed_default == "null");
}

void SectionReader::known(const char* key) { find(key); }

const json* SectionReader::find(const char* key) {
  if (!find_config_key(path(key)))
    throw std::logic_error("config key '" + path(key) + "' is read but missing from the table in runtime/config_keys_*.cpp");
  known_.emplace_back(key);
  if (!has(key)) return nullptr;
  return &*obj_.find(key);
}

void SectionReader::get(const char* key, bool& out) {
  if (const json* v = find(key)) out = checked(key, *find_config_key(path(key)), *v).get<bool>();
}

void SectionReader::get(const char* key, std::optional<bool>& out) {
  bool b = false;
  if (has(key)) get(key, b), out = b;
  else find(key);
}

void SectionReader::get(const char* key, std::int64_t& out) {
  if (const json* v = find(key)) out = checked(key, *find_config_key(path(key)), *v).get<std::int64_t>();
}

void SectionReader::get(const char* key, int& out) {
  std::int64_t v = out;
  get(key, v);
  if (v < INT32_MIN || v > INT32_MAX) fail(path(key) + " must fit in 32 bits, got " + std::to_string(v));
  out = static_cast<int>(v);
}

void SectionReader::get(const char* key, std::uint64_t& out) {
  std::int64_t v = static_cast<std::int64_t>(out);
  get(key, v);
  out = static_cast<std::uint64_t>(v);
}

void SectionReader::get(const char* key, double& out) {
  if (const json* v = find(key)) out = checked(key, *find_config_key(path(key)), *v).get<double>();
}

void SectionReader::get(const char* key, std::optional<double>& out) {
  double d = 0;
  if (has(key)) get(key, d), out = d;
  else find(key);
}

void SectionReader::get(const char* key, std::string& out, std::initializer_list<const char*> allowed) {
  const json* v = find(key);
  if (!v) return;
  std::string s = checked(key, *find_config_key(path(key)), *v).get<std::string>();
  if (allowed.size() > 0 && std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return s == a; })) {
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    fail(path(key) + " must be one of " + list + ", got '" + truncate_for_message(s) + "'");
  }
  out = s;
}

const json* SectionReader::object(const char* key) {
  const json* v = find(key);
  if (v) checked(key, *find_config_key(path(key)), *v);
  return v;
}

void SectionReader::finish(std::vector<std::string>& warnings, int zero_stage) const {
  // Keys the table lists but the parser does not read (no effect, or not implemented) are valid too.
  auto accepted = [&](const std::string& key) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) return true;
    const ConfigKey* k = find_config_key(path(key));
    return k && k->status != KeyStatus::implemented;
  };
  // Suggestions: what was read, plus the table's keys of this section that need no reading (at the
  // top level, every top-level key).
  auto nearest = [&](const std::string& key) {
    std::vector<std::string> valid = known_;
    const std::string prefix = name_.empty() ? "" : name_ + ".";
    for (const ConfigKey& k : config_keys()) {
      if (!k.path.starts_with(prefix)) continue;
      const std::string_view leaf = k.path.substr(prefix.size());
      if (leaf.find('.') == std::string_view::npos && (name_.empty() || k.status != KeyStatus::implemented))
        valid.emplace_back(leaf);
    }
    return nearest_key(key, valid);
  };
  struct Present {
    const ConfigKey* key;
    json value;            // as read: in a pydantic section "1.0" is 1.0
    const json* written;  // as written, for the messages
  };
  std::vector<Present> present;
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    const std::string& key = it.key();
    if (!accepted(key)) {
      // A key far longer than any real one (the longest has 41 characters) is no typo of one; its edit
      // distance to every key would cost length x 1000 steps (a 10 MB key: seconds) for nothing.
      const bool suggest = key.size() <= kMaxSuggestedKey;
      const std::string near = suggest ? nearest(key) : "";
      if (!name_.empty())
        fail("unknown key '" + truncate_for_message(key) + "' in " + name_ +
             (suggest ? "; did you mean '" + near + "'?" : std::string()));
      // A near-miss of a key we implement ("gradient_cliping") would train without its effect: that is
      // an error. Anything else, a DeepSpeed key we do not know or the user's own note, only warns,
      // with a suggestion when it is close to a name in the table.
      const std::string ours = suggest ? nearest_implemented_top_level_key(key) : "";
      if (!ours.empty() && is_near_miss(key, ours))
        fail("unknown top-level key '" + truncate_for_message(key) + "'; did you mean '" + ours +
             "'? (as written it would have no effect; rename it, or remove it)");
      const bool close = suggest && edit_distance(key, near) <= std::max<std::size_t>(2, key.size() / 3);
      warnings.push_back("unknown top-level key '" + truncate_for_message(key) + "' ignored: minitorch does not know it (DeepSpeed would "
                         "silently ignore it)" + (close ? "; did you mean '" + near + "'?" : std::string()));
      continue;
    }
    const ConfigKey* entry = find_config_key(path(key));
    if (it.value().is_null() && entry->deepspeed_default == "null") continue;  // None: as if absent
    // A key without effect still has DeepSpeed's type and range; and its off value is judged as read.
    present.push_back({entry, checked(key, *entry, it.value()), &it.value()});
  }
  for (const auto& [k, value, written] : present) {
    KeyVerdict v = judge_config_key(*k, value, zero_stage, written);
    if (v.status == KeyStatus::error) fail(v.message);
    if (!v.message.empty()) warnings.push_back(std::move(v.message));
  }
}

}  // namespace minitorch::runtime
