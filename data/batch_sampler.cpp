/// \file batch_sampler.cpp
#include "data/batch_sampler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "minitorch/random.h"

namespace minitorch::data {

namespace {
// Salt for the sampler's streams, so that they never coincide with another component drawing
// Generator::for_stream(seed, k) from the same user seed (e.g. weight init).
constexpr std::uint64_t kSamplerSalt = 0x6261746368657321ull;  // "batches!"

/// x[b, :] = tokens[o_b : o_b + T], y[b, :] = tokens[o_b + 1 : o_b + T + 1].
Batch gather(const std::vector<std::int32_t>& tokens, const std::vector<std::int64_t>& starts, std::int64_t T) {
  const auto B = static_cast<std::int64_t>(starts.size());
  std::vector<std::int32_t> x(static_cast<std::size_t>(B * T)), y(x.size());
  for (std::int64_t b = 0; b < B; ++b) {
    auto src = tokens.begin() + starts[static_cast<std::size_t>(b)];
    std::copy(src, src + T, x.begin() + b * T);
    std::copy(src + 1, src + T + 1, y.begin() + b * T);
  }
  return {Tensor::from_ints(x, {B, T}), Tensor::from_ints(y, {B, T})};
}

void check_tokens(const std::shared_ptr<const std::vector<std::int32_t>>& tokens, std::int64_t block_size,
                  const char* who) {
  if (!tokens) throw std::invalid_argument(std::string(who) + ": no tokens given");
  if (block_size < 1)
    throw std::invalid_argument(std::string(who) + ": block_size must be at least 1, got " +
                                std::to_string(block_size));
  if (static_cast<std::int64_t>(tokens->size()) < block_size + 1)
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(tokens->size()) +
                                " tokens, fewer than block_size + 1 = " + std::to_string(block_size + 1));
}
}  // namespace

BatchSampler::BatchSampler(std::shared_ptr<const std::vector<std::int32_t>> tokens, std::int64_t batch_size,
                           std::int64_t block_size, std::uint64_t seed)
    : tokens_(std::move(tokens)), batch_size_(batch_size), block_size_(block_size), seed_(seed) {
  check_tokens(tokens_, block_size_, "BatchSampler");
  if (batch_size_ < 1)
    throw std::invalid_argument("BatchSampler: batch_size must be at least 1, got " + std::to_string(batch_size_));
}

std::uint64_t BatchSampler::micro_batch_index(std::int64_t rank, std::int64_t step, std::int64_t world,
                                              std::int64_t micro, std::int64_t grad_accum) {
  if (world < 1 || rank < 0 || rank >= world)
    throw std::invalid_argument("BatchSampler: rank " + std::to_string(rank) + " is not in [0, " +
                                std::to_string(world) + ")");
  if (grad_accum < 1 || micro < 0 || micro >= grad_accum)
    throw std::invalid_argument("BatchSampler: micro-step " + std::to_string(micro) + " is not in [0, " +
                                std::to_string(grad_accum) + ")");
  if (step < 0) throw std::invalid_argument("BatchSampler: negative step " + std::to_string(step));
  auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  return (u(step) * u(grad_accum) + u(micro)) * u(world) + u(rank);
}

std::vector<std::int64_t> BatchSampler::offsets(std::uint64_t index) const {
  Generator gen = Generator::for_stream(mix64(seed_ ^ kSamplerSalt), index);
  // Starts in [0, n - T - 1], so that the target window (one token further) still fits.
  const auto n_starts = static_cast<std::uint64_t>(static_cast<std::int64_t>(tokens_->size()) - block_size_);
  std::vector<std::int64_t> starts(static_cast<std::size_t>(batch_size_));
  for (auto& s : starts) s = static_cast<std::int64_t>(gen.next_below(n_starts));
  return starts;
}

Batch BatchSampler::batch(std::uint64_t index) const { return gather(*tokens_, offsets(index), block_size_); }

Batch BatchSampler::sample(std::int64_t rank, std::int64_t step, std::int64_t world, std::int64_t micro,
                           std::int64_t grad_accum) const {
  return batch(micro_batch_index(rank, step, world, micro, grad_accum));
}

EvalWindows::EvalWindows(std::shared_ptr<const std::vector<std::int32_t>> tokens, std::int64_t block_size)
    : tokens_(std::move(tokens)), block_size_(block_size) {
  check_tokens(tokens_, block_size_, "EvalWindows");
  count_ = static_cast<std::int64_t>(tokens_->size()) / (block_size_ + 1);
}

Batch EvalWindows::batch(std::int64_t first, std::int64_t max_count) const {
  if (first < 0 || first >= count_)
    throw std::out_of_range("EvalWindows: first window " + std::to_string(first) + " is not in [0, " +
                            std::to_string(count_) + ")");
  if (max_count < 1) throw std::invalid_argument("EvalWindows: max_count must be at least 1");
  const std::int64_t m = std::min(max_count, count_ - first);
  std::vector<std::int64_t> starts(static_cast<std::size_t>(m));
  for (std::int64_t k = 0; k < m; ++k) starts[static_cast<std::size_t>(k)] = (first + k) * (block_size_ + 1);
  return gather(*tokens_, starts, block_size_);
}

}  // namespace minitorch::data
