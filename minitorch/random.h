#pragma once
/// \file random.h
/// Seeded random numbers that are identical on every platform and compiler: a counter-based
/// generator (SplitMix64 over a 64-bit counter) and our own Box-Muller, because the standard
/// library's distributions are implementation-defined.
#include <cstdint>

namespace minitorch {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed), counter_(0) {}
  /// Next 64 random bits.
  std::uint64_t next_u64();
  /// Uniform in [0, 1) with 24 random bits.
  float next_float();
  /// Uniform in [0, 1) with 53 random bits.
  double next_double();
  /// Standard normal (Box-Muller; the second value of each pair is cached).
  float next_normal();
  /// Uniform integer in [0, n).
  std::uint64_t next_below(std::uint64_t n);
  std::uint64_t seed() const { return seed_; }
  std::uint64_t counter() const { return counter_; }
  /// Derives an independent generator for a stream (e.g. a rank or a step) from this seed.
  static Generator for_stream(std::uint64_t seed, std::uint64_t stream);

 private:
  std::uint64_t seed_;
  std::uint64_t counter_;
  bool has_cached_normal_ = false;
  float cached_normal_ = 0.f;
};

/// SplitMix64 finaliser: a good 64-bit mix of x.
std::uint64_t mix64(std::uint64_t x);

}  // namespace minitorch
