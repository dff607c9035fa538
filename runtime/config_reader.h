#pragma once
/// \file config_reader.h
/// Strict reading of one JSON object (a config section): typed getters that name the key and the
/// expected type on a mismatch, and a final check of every key present against the key table
/// (runtime/config_keys.h): unknown keys fail with the nearest valid key as a suggestion, known ones get
/// the table's verdict (nothing, a warning, or "not implemented yet"). Used by runtime/config.cpp and config_sections.cpp;
/// separate so the config itself reads as a list of DeepSpeed's keys and defaults.
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config_keys.h"

namespace minitorch::runtime {

/// `v` read as `type`, DeepSpeed's way: a whole float is an integer everywhere (5e8); with `lax` (a
/// pydantic section: is_pydantic_section) also a numeric string is a number ("3" → 3, "1e-3"), and 0/1,
/// 0.0/1.0 and "true"/"false"/"yes"/"no"/"on"/"off"/"t"/"f"/"y"/"n"/"1"/"0" (any case) are booleans.
/// A boolean is never a number (DeepSpeed's fp16 validators refuse that too). nullopt: not a `type`.
std::optional<nlohmann::json> coerce_value(const nlohmann::json& v, ValueType type, bool lax);

/// `s` with its ASCII letters in lower case (DeepSpeed compares names and some values ignoring case).
std::string ascii_lower(std::string s);

/// Levenshtein distance (insert, delete, substitute: cost 1 each).
std::size_t edit_distance(const std::string& a, const std::string& b);
/// The entry of `valid` closest to `key` by edit distance (first one on ties; "" if `valid` is empty).
std::string nearest_key(const std::string& key, const std::vector<std::string>& valid);

/// The top-level key of the table that minitorch implements (a section or a key with its effect)
/// closest to `key` by edit distance.
std::string nearest_implemented_top_level_key(const std::string& key);
/// `key` is a misspelling of `valid`: equal ignoring case, or at most min(2, len/4) edits away.
bool is_near_miss(const std::string& key, const std::string& valid);

/// Parses JSON text. Throws ConfigError "<source>: malformed JSON: <nlohmann's message with position>"
/// or, like DeepSpeed, on a key repeated within one object.
nlohmann::json parse_config_json(const std::string& text, const std::string& source);

class SectionReader {
 public:
  /// `obj` must outlive the reader; `name` is the section's dotted path ("" for the top level).
  SectionReader(const nlohmann::json& obj, std::string name, std::string source);

  /// The key is present (a null where DeepSpeed's default is None counts as absent).
  bool has(const char* key) const;
  // The getters check the value against the table's type and range (checked()); an absent key leaves `out`.
  void get(const char* key, bool& out);
  void get(const char* key, std::optional<bool>& out);
  /// Integers; 5e8 written as a JSON float is accepted when it is a whole number (DeepSpeed configs
  /// often do this).
  void get(const char* key, std::int64_t& out);
  void get(const char* key, int& out);
  void get(const char* key, std::uint64_t& out);
  /// A finite number (nlohmann reads 1e999 as inf: refused too).
  void get(const char* key, double& out);
  void get(const char* key, std::optional<double>& out);
  /// A string; if `allowed` is non-empty the value must be one of them.
  void get(const char* key, std::string& out, std::initializer_list<const char*> allowed = {});
  /// A nested object (nullptr if absent); an error if present but not an object.
  const nlohmann::json* object(const char* key);
  /// A key read here without a getter (the caller reads its value).
  void known(const char* key);
  /// Checks every key present, in two passes. First, a key that was never read and that the table
  /// does not list as warning or error is unknown: a ConfigError naming the nearest valid key inside
  /// a section; at the top level a ConfigError too when it is a near-miss (is_near_miss) of a key
  /// minitorch implements, otherwise a warning (DeepSpeed ignores unknown top-level keys silently).
  /// Then each key gets the table's verdict for ZeRO stage `zero_stage`: warnings are appended to
  /// `warnings`, a not-implemented feature throws ConfigError.
  void finish(std::vector<std::string>& warnings, int zero_stage = 0) const;

  /// "zero_optimization.reduce_bucket_size" style path of a key.
  std::string path(const std::string& key) const { return name_.empty() ? key : name_ + "." + key; }
  /// Throws ConfigError "<source>: <message>".
  [[noreturn]] void fail(const std::string& message) const;

 private:
  /// Registers `key` as read; a key missing from the table is a bug in the parser (std::logic_error).
  /// nullptr when absent or a null standing for DeepSpeed's None.
  const nlohmann::json* find(const char* key);
  /// `v`, the value of `key`, checked against the table's type (coerce_value) and range: the coerced
  /// value, or a ConfigError naming the key, what it must be and what it is.
  nlohmann::json checked(const std::string& key, const ConfigKey& entry, const nlohmann::json& v) const;

  const nlohmann::json& obj_;
  std::string name_, source_;
  bool lax_;  ///< a pydantic section
  std::vector<std::string> known_;
};

}  // namespace minitorch::runtime
