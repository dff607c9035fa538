#pragma once
/// \file config_error.h
/// The one exception of the config (runtime/config.h) and of the reader that throws it (runtime/config_reader.h):
/// its own header, so that neither of the two includes the other.
#include <stdexcept>

namespace minitorch::runtime {

/// Every configuration error: one clear message (file, key, what was expected).
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace minitorch::runtime
