// BatchSampler determinism, rank independence, the DP/accumulation equivalence of its numbering,
// and the fixed evaluation windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <set>

#include "data/batch_sampler.h"

using namespace minitorch::data;

namespace {
/// Token ids 0, 1, ..., n-1: then x[b, t] = offset_b + t, which makes windows easy to check.
std::shared_ptr<const std::vector<std::int32_t>> iota_tokens(int n) {
  auto v = std::make_shared<std::vector<std::int32_t>>(static_cast<std::size_t>(n));
  std::iota(v->begin(), v->end(), 0);
  return v;
}
bool same(const Batch& a, const Batch& b) {
  return a.x.to_int_vector() == b.x.to_int_vector() && a.y.to_int_vector() == b.y.to_int_vector();
}
}  // namespace

TEST(L03_DataBatchSampler, ShapesAndShiftedTargets) {
  const int n = 1000;
  const std::int64_t B = 4, T = 16;
  BatchSampler s(iota_tokens(n), B, T, 1337);
  Batch b = s.sample(/*rank=*/0, /*step=*/3);
  EXPECT_EQ(b.x.shape(), (minitorch::Shape{B, T}));
  EXPECT_EQ(b.y.shape(), (minitorch::Shape{B, T}));
  EXPECT_EQ(b.x.dtype(), minitorch::DType::i32);
  EXPECT_EQ(b.y.dtype(), minitorch::DType::i32);
  auto x = b.x.to_int_vector(), y = b.y.to_int_vector();
  auto offs = s.offsets(BatchSampler::micro_batch_index(0, 3, 1, 0, 1));
  for (std::int64_t r = 0; r < B; ++r)
    for (std::int64_t t = 0; t < T; ++t) {
      EXPECT_EQ(x[static_cast<std::size_t>(r * T + t)], offs[static_cast<std::size_t>(r)] + t);
      EXPECT_EQ(y[static_cast<std::size_t>(r * T + t)], offs[static_cast<std::size_t>(r)] + t + 1);  // next token
    }
}

TEST(L03_DataBatchSampler, OffsetsCoverExactlyTheValidRange) {
  const int n = 8;
  const std::int64_t T = 4;  // valid starts: [0, n - T - 1] = [0, 3]
  BatchSampler s(iota_tokens(n), 8, T, 7);
  std::set<std::int64_t> seen;
  for (std::uint64_t i = 0; i < 64; ++i)
    for (auto o : s.offsets(i)) seen.insert(o);
  EXPECT_EQ(seen, (std::set<std::int64_t>{0, 1, 2, 3}));
}

TEST(L03_DataBatchSampler, SameArgumentsSameBatch) {
  auto tokens = iota_tokens(5000);
  BatchSampler a(tokens, 8, 32, 42), b(tokens, 8, 32, 42);
  for (std::int64_t step : {0, 1, 17, 1000})
    for (std::int64_t rank : {0, 1, 2, 3}) EXPECT_TRUE(same(a.sample(rank, step, 4), b.sample(rank, step, 4)));
  // Pure function: asking in another order changes nothing.
  Batch late = a.sample(2, 9, 4);
  a.sample(0, 0, 4);
  EXPECT_TRUE(same(late, a.sample(2, 9, 4)));
}

TEST(L03_DataBatchSampler, RanksStepsAndSeedsDiffer) {
  auto tokens = iota_tokens(100000);
  BatchSampler s(tokens, 8, 32, 42), other_seed(tokens, 8, 32, 43);
  EXPECT_FALSE(same(s.sample(0, 5, 2), s.sample(1, 5, 2)));
  EXPECT_FALSE(same(s.sample(0, 5, 2), s.sample(0, 6, 2)));
  EXPECT_FALSE(same(s.sample(0, 5, 2), other_seed.sample(0, 5, 2)));
  // All micro-batches of a run are distinct streams.
  std::set<std::vector<std::int64_t>> all;
  for (std::int64_t step = 0; step < 10; ++step)
    for (std::int64_t rank = 0; rank < 4; ++rank)
      all.insert(s.offsets(BatchSampler::micro_batch_index(rank, step, 4, 0, 1)));
  EXPECT_EQ(all.size(), 40u);
}

TEST(L03_DataBatchSampler, DataParallelEqualsAccumulation) {
  // 4 ranks without accumulation train on the micro-batches of 1 rank accumulating 4 (docs/design.md §8),
  // and 2 ranks x 2 micro-steps too.
  BatchSampler s(iota_tokens(20000), 4, 16, 1337);
  for (std::int64_t step : {0, 1, 7}) {
    std::set<std::vector<std::int32_t>> ddp, accum, mixed;
    for (std::int64_t r = 0; r < 4; ++r) ddp.insert(s.sample(r, step, 4).x.to_int_vector());
    for (std::int64_t m = 0; m < 4; ++m) accum.insert(s.sample(0, step, 1, m, 4).x.to_int_vector());
    for (std::int64_t r = 0; r < 2; ++r)
      for (std::int64_t m = 0; m < 2; ++m) mixed.insert(s.sample(r, step, 2, m, 2).x.to_int_vector());
    EXPECT_EQ(ddp, accum);
    EXPECT_EQ(ddp, mixed);
    EXPECT_EQ(ddp.size(), 4u);
  }
}

TEST(L03_DataBatchSampler, RejectsBadArguments) {
  auto tokens = iota_tokens(100);
  EXPECT_THROW(BatchSampler(tokens, 0, 8, 1), std::invalid_argument);
  EXPECT_THROW(BatchSampler(tokens, 2, 100, 1), std::invalid_argument);  // needs block_size + 1 tokens
  BatchSampler s(tokens, 2, 8, 1);
  EXPECT_THROW(s.sample(2, 0, 2), std::invalid_argument);                // rank outside the world
  EXPECT_THROW(s.sample(0, 0, 1, 3, 2), std::invalid_argument);          // micro-step outside accumulation
  EXPECT_THROW(s.sample(0, -1, 1), std::invalid_argument);
}

TEST(L03_DataBatchSampler, EvalWindowsAreConsecutiveAndDropTheRemainder) {
  const std::int64_t T = 4;
  EvalWindows ev(iota_tokens(23), T);  // windows of 5 tokens: 23 / 5 = 4, 3 tokens dropped
  EXPECT_EQ(ev.count(), 4);
  Batch all = ev.batch(0, 100);
  ASSERT_EQ(all.x.shape(), (minitorch::Shape{4, T}));
  auto x = all.x.to_int_vector(), y = all.y.to_int_vector();
  for (std::int64_t k = 0; k < 4; ++k)
    for (std::int64_t t = 0; t < T; ++t) {
      EXPECT_EQ(x[static_cast<std::size_t>(k * T + t)], k * (T + 1) + t);
      EXPECT_EQ(y[static_cast<std::size_t>(k * T + t)], k * (T + 1) + t + 1);
    }
  Batch two = ev.batch(2, 1);
  EXPECT_EQ(two.x.shape(), (minitorch::Shape{1, T}));
  EXPECT_EQ(two.x.to_int_vector(), (std::vector<std::int32_t>{10, 11, 12, 13}));
  EXPECT_EQ(two.y.to_int_vector(), (std::vector<std::int32_t>{11, 12, 13, 14}));
  EXPECT_EQ(ev.batch(3, 8).x.shape(), (minitorch::Shape{1, T}));  // clipped at the last window
  EXPECT_THROW(ev.batch(4, 1), std::out_of_range);
  EXPECT_EQ(EvalWindows(iota_tokens(25), T).count(), 5);             // exact multiple: nothing dropped
  EXPECT_THROW(EvalWindows(iota_tokens(4), T), std::invalid_argument);
}
