#pragma once
// What the config suites share: parsing a JSON text as "test.json" and the message of its ConfigError.
#include <functional>
#include <string>

#include "test_util.h"
#include "runtime/config.h"

namespace config_test {

using mt_test::contains;

/// The ConfigError `f` throws; another exception is marked "(not a ConfigError)"; none: "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const minitorch::runtime::ConfigError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a ConfigError) ") + e.what();
  }
  return "(no error)";
}
inline minitorch::runtime::Config parse(const std::string& json, int world = 1) {
  return minitorch::runtime::Config::from_json(json, world, "test.json");
}
inline std::string parse_error(const std::string& json, int world = 1) {
  return error_of([&] { parse(json, world); });
}
/// A minimal valid config plus `extra` top-level members.
inline std::string with(const std::string& extra) {
  return R"({"train_micro_batch_size_per_gpu": 2)" + (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace config_test
