#pragma once
/// \file batch_sampler.h
/// Training batches as a pure function of (seed, micro-batch number) — no sampler state, so every
/// rank, a resumed run and a rerun draw exactly the same data (docs/design.md §3 determinism) — and the
/// fixed evaluation windows `minitorch-eval` walks through.
///
/// Which micro-batch a rank trains on. Micro-batches are numbered in one global order:
///   index = (step * grad_accum + micro) * world + rank
/// so optimizer step s always consumes indices [s·G·W, (s+1)·G·W) with G·W = global batch / B,
/// whatever the split between ranks (W) and accumulation (G). A 4-rank run with G = 1 therefore trains
/// on exactly the micro-batches of a 1-rank run with G = 4 (docs/design.md §8 equivalence).
///
/// \code
///   using namespace minitorch::data;
///   BatchSampler sampler(ds.tokens_ptr(Split::train), /*batch=*/8, /*block=*/64, /*seed=*/1337);
///   Batch b = sampler.sample(/*rank=*/r, /*step=*/s, /*world=*/W);   // b.x, b.y: i32 (8, 64)
///   EvalWindows ev(ds.tokens_ptr(Split::val), 64);
///   Batch e = ev.batch(/*first=*/0, /*max_count=*/16);                // windows 0..15
/// \endcode
#include <cstdint>
#include <memory>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch::data {

/// Inputs and next-token targets: y[b, t] is the token after x[b, t]. Both i32, shape (B, T).
struct Batch {
  Tensor x;
  Tensor y;
};

/// Random windows of block_size + 1 tokens (nanoGPT's get_batch), seeded per micro-batch.
class BatchSampler {
 public:
  /// `tokens` needs at least block_size + 1 ids. Throws std::invalid_argument otherwise or if
  /// batch_size or block_size < 1.
  BatchSampler(std::shared_ptr<const std::vector<std::int32_t>> tokens, std::int64_t batch_size,
               std::int64_t block_size, std::uint64_t seed);

  /// The micro-batch `micro` (of `grad_accum`) that data-parallel rank `rank` (of `world`) trains on
  /// in optimizer step `step`: batch(micro_batch_index(...)). Same arguments ⇒ same batch; different
  /// ranks ⇒ different (independently drawn) batches.
  Batch sample(std::int64_t rank, std::int64_t step, std::int64_t world = 1, std::int64_t micro = 0,
               std::int64_t grad_accum = 1) const;
  /// Micro-batch number `index` of the global order: B offsets drawn uniformly from [0, n - T - 1]
  /// with Generator::for_stream(salted seed, index).
  Batch batch(std::uint64_t index) const;
  /// The B window starts of micro-batch `index` (what batch() slices).
  std::vector<std::int64_t> offsets(std::uint64_t index) const;
  /// ((step * grad_accum + micro) * world + rank); checks 0 <= rank < world, 0 <= micro < grad_accum.
  static std::uint64_t micro_batch_index(std::int64_t rank, std::int64_t step, std::int64_t world,
                                         std::int64_t micro, std::int64_t grad_accum);

  std::int64_t batch_size() const { return batch_size_; }
  std::int64_t block_size() const { return block_size_; }

 private:
  std::shared_ptr<const std::vector<std::int32_t>> tokens_;
  std::int64_t batch_size_, block_size_;
  std::uint64_t seed_;
};

/// Consecutive non-overlapping windows of block_size + 1 tokens: window k covers tokens
/// [k(T+1), k(T+1) + T]; its inputs are the first T, its targets the next token at each position.
/// The trailing partial window is dropped, so count() = n / (T + 1). Deterministic and independent of
/// the number of ranks: the evaluation set is the same for every run.
class EvalWindows {
 public:
  /// Throws std::invalid_argument if block_size < 1 or there is not one whole window.
  EvalWindows(std::shared_ptr<const std::vector<std::int32_t>> tokens, std::int64_t block_size);
  /// Number of whole windows.
  std::int64_t count() const { return count_; }
  std::int64_t block_size() const { return block_size_; }
  /// Windows [first, first + m) with m = min(max_count, count() - first): x, y of shape (m, T).
  /// Throws std::out_of_range if first is not in [0, count()).
  Batch batch(std::int64_t first, std::int64_t max_count) const;

 private:
  std::shared_ptr<const std::vector<std::int32_t>> tokens_;
  std::int64_t block_size_, count_;
};

}  // namespace minitorch::data
