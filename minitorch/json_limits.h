#pragma once
/// \file json_limits.h
/// Bounds on untrusted JSON (config files, safetensors headers, checkpoint metadata). nlohmann's
/// parser is iterative, but dump() and many accessors recurse: a value nested 100 000 levels deep
/// parses fine and then overflows the stack when an error message quotes it. So nesting is bounded
/// while parsing, and error messages quote at most a short excerpt of a value.
///
/// \code
///   nlohmann::json j = minitorch::parse_json_bounded(text, "config 'c.json'");  // throws JsonLimitError
///   throw std::runtime_error("expected a number, got " + minitorch::json_excerpt(j["lr"]));
/// \endcode
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace minitorch {

/// The deepest nesting of arrays and objects accepted (a config needs 4 levels, a header 3).
constexpr int kMaxJsonDepth = 64;
/// The most characters of a value an error message quotes.
constexpr std::size_t kMaxJsonExcerpt = 80;

/// Nesting beyond kMaxJsonDepth: "<what>: JSON nested deeper than 64 levels at byte N".
class JsonLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An extra per-event check, run after the depth check (e.g. duplicate keys); return false to drop
/// the value, as nlohmann's callbacks do.
using JsonParseCallback = nlohmann::json::parser_callback_t;

/// json::parse(text) with nesting bounded to kMaxJsonDepth (JsonLimitError naming `what`); malformed
/// JSON still throws nlohmann::json::parse_error.
nlohmann::json parse_json_bounded(const std::string& text, const std::string& what,
                                  const JsonParseCallback& extra = nullptr);

/// `s` cut to `max` characters with "..." appended when longer (never splits a UTF-8 character).
std::string truncate_for_message(const std::string& s, std::size_t max = kMaxJsonExcerpt);
/// v.dump() cut to kMaxJsonExcerpt characters with "...". Safe on any value parse_json_bounded made.
std::string json_excerpt(const nlohmann::json& v);

}  // namespace minitorch
