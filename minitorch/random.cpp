#include "minitorch/random.h"

#include <cmath>
#include <stdexcept>

namespace minitorch {

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Counter-based: the n-th draw is mix64(seed-key + n), so a generator is just (seed, counter).
std::uint64_t Generator::next_u64() { return mix64(mix64(seed_) + 0x9e3779b97f4a7c15ull * ++counter_); }

float Generator::next_float() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

double Generator::next_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

float Generator::next_normal() {
  if (has_cached_normal_) {
    has_cached_normal_ = false;
    return cached_normal_;
  }
  // Box-Muller on (0, 1] x [0, 1): log never sees 0.
  double u1 = 1.0 - next_double(), u2 = next_double();
  double r = std::sqrt(-2.0 * std::log(u1)), theta = 2.0 * M_PI * u2;
  cached_normal_ = static_cast<float>(r * std::sin(theta));
  has_cached_normal_ = true;
  return static_cast<float>(r * std::cos(theta));
}

std::uint64_t Generator::next_below(std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("Generator::next_below(0)");
  // Rejection sampling removes modulo bias.
  std::uint64_t limit = ~0ull - (~0ull % n);
  std::uint64_t x;
  do x = next_u64();
  while (x >= limit);
  return x % n;
}

Generator Generator::for_stream(std::uint64_t seed, std::uint64_t stream) {
  return Generator(mix64(seed ^ mix64(stream + 0x632be59bd9b4e019ull)));
}

}  // namespace minitorch
