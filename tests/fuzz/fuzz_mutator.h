#pragma once
// Deterministic input mutation for the ctest fuzz driver: input i of a campaign is a pure function of
// (seed, i, the seeds), so a failure is reproduced by its index alone, on any machine and compiler
// (our own PRNG and our own range reduction; <random>'s distributions differ between libraries).
//
// Each input is a seed with 1 to 4 mutations stacked on it. Byte-level: bit flips, a byte set to an
// interesting value, interesting tokens inserted, ranges deleted, duplicated or inserted at random,
// truncation, splicing with another seed. Structure-aware, by the target's InputKind:
// - json: a number replaced by an extreme one (1e308, -1, 2^63, 2^64, 1e999, ...) or by another type,
//   nesting thousands of levels deep, huge arrays and strings, a key repeated;
// - safetensors: the 8-byte header length rewritten (0, off by one, beyond the file, 2^63, ...);
//   shapes and data offsets rewritten as lists of extreme sizes; and the JSON mutations above
//   applied inside the header; the last two with the length kept consistent, so that they reach the
//   checks behind the length check;
// - text: invalid and extreme UTF-8 (overlong forms, surrogates, beyond U+10FFFF, truncated
//   sequences), NUL bytes, long runs of one character.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_targets.h"

namespace mt_fuzz {

/// splitmix64: small, fast and the same everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  /// Uniform in [0, n) for n > 0 (Lemire's multiply-shift; the tiny bias does not matter here).
  std::uint64_t below(std::uint64_t n);
  /// True with probability 1/n.
  bool one_in(std::uint64_t n) { return below(n) == 0; }

 private:
  std::uint64_t state_;
};

/// Input `index` of the campaign `campaign_seed` over `seeds` for inputs of `kind`, at most
/// `max_size` bytes.
std::string mutate(const std::vector<std::string>& seeds, InputKind kind, std::uint64_t campaign_seed,
                   std::uint64_t index, std::size_t max_size = 1 << 18);

}  // namespace mt_fuzz
