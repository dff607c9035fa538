// L01 — seeded randomness: the same seed gives the same stream on every platform, streams derived
// with for_stream differ, and the distributions have the right moments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <vector>

#include "minitorch/random.h"
#include "minitorch/tensor.h"

using namespace minitorch;

namespace {
std::vector<std::uint64_t> draw(Generator g, int n) {
  std::vector<std::uint64_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = g.next_u64();
  return v;
}
}  // namespace

TEST(L01_Random, Mix64IsSplitMix64) {
  // SplitMix64's published first output for state 0 (Vigna's reference implementation).
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(mix64(1), 0x910a2dec89025cc1ull);
}

TEST(L01_Random, GoldenStreamIsPlatformIndependent) {
  // The n-th draw is mix64(mix64(seed) + golden * n): pinned so any platform gives these bits.
  Generator g(1337);
  EXPECT_EQ(g.next_u64(), 0x5be0404a81258bbeull);
  EXPECT_EQ(g.next_u64(), 0xb81ef245a4ff7476ull);
  EXPECT_EQ(g.next_u64(), 0x652a626ec872fa40ull);
  EXPECT_EQ(g.counter(), 3u);
  EXPECT_EQ(g.seed(), 1337u);
}

TEST(L01_Random, SameSeedSameStream) {
  EXPECT_EQ(draw(Generator(42), 1000), draw(Generator(42), 1000));
  EXPECT_NE(draw(Generator(42), 16), draw(Generator(43), 16));
  Generator a(7), b(7);
  for (int i = 0; i < 1001; ++i) ASSERT_EQ(a.next_normal(), b.next_normal()) << i;  // odd count: cache too
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.next_float(), b.next_float());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.next_below(1000), b.next_below(1000));
}

TEST(L01_Random, CopyingAGeneratorForksTheStream) {
  Generator a(5);
  a.next_u64();
  Generator b = a;
  EXPECT_EQ(a.next_u64(), b.next_u64());
}

TEST(L01_Random, ForStreamGivesDifferentStreams) {
  std::set<std::uint64_t> firsts;
  for (std::uint64_t s = 0; s < 64; ++s) firsts.insert(Generator::for_stream(1234, s).next_u64());
  EXPECT_EQ(firsts.size(), 64u);  // 64 ranks, 64 different streams
  EXPECT_NE(draw(Generator::for_stream(1234, 0), 8), draw(Generator(1234), 8));
  EXPECT_NE(draw(Generator::for_stream(1234, 1), 8), draw(Generator::for_stream(1235, 1), 8));
  // deterministic
  EXPECT_EQ(draw(Generator::for_stream(99, 3), 100), draw(Generator::for_stream(99, 3), 100));
  // and not a shifted copy of each other: no overlap in the first 1000 draws
  auto s0 = draw(Generator::for_stream(1234, 0), 1000), s1 = draw(Generator::for_stream(1234, 1), 1000);
  std::set<std::uint64_t> set0(s0.begin(), s0.end());
  for (auto x : s1) EXPECT_EQ(set0.count(x), 0u);
}

TEST(L01_Random, NormalHasMeanZeroStdOne) {
  Generator g(2024);
  const int n = 100000;
  double sum = 0, sum2 = 0, sum3 = 0;
  int within1 = 0;
  for (int i = 0; i < n; ++i) {
    double x = g.next_normal();
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sum2 += x * x;
    sum3 += x * x * x;
    within1 += std::abs(x) < 1.0;
  }
  double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.015);             // standard error 0.003
  EXPECT_NEAR(std::sqrt(var), 1.0, 0.015);   // standard error 0.002
  EXPECT_NEAR(sum3 / n, 0.0, 0.05);          // symmetric
  EXPECT_NEAR(within1 / double(n), 0.6827, 0.01);
}

TEST(L01_Random, UniformFloatAndDoubleInUnitInterval) {
  Generator g(11);
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    float f = g.next_float();
    ASSERT_GE(f, 0.f);
    ASSERT_LT(f, 1.f);
    double d = g.next_double();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum += f;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);
}

TEST(L01_Random, NextBelowInRangeAndUnbiased) {
  Generator g(31337);
  const int n = 60000, k = 6;
  std::vector<int> counts(k, 0);
  for (int i = 0; i < n; ++i) {
    auto x = g.next_below(k);
    ASSERT_LT(x, static_cast<std::uint64_t>(k));
    ++counts[x];
  }
  double chi2 = 0, expect = double(n) / k;
  for (int c : counts) chi2 += (c - expect) * (c - expect) / expect;
  EXPECT_LT(chi2, 20.5);  // 5 degrees of freedom: p = 0.001
  for (int i = 0; i < 100; ++i) EXPECT_EQ(g.next_below(1), 0u);
  // a range that does not divide 2^64: n = 3 * 2^62. Plain modulo would put half the draws in the
  // lowest third (x mod n for x >= n folds onto [0, 2^62)); rejection sampling keeps it at 1/3.
  const std::uint64_t big = 3ull << 62;
  int lowest_third = 0;
  for (int i = 0; i < 10000; ++i) {
    auto x = g.next_below(big);
    ASSERT_LT(x, big);
    lowest_third += x < (1ull << 62);
  }
  EXPECT_NEAR(lowest_third / 10000.0, 1.0 / 3, 0.03);
}

TEST(L01_Random, NextBelowZeroThrows) {
  Generator g(1);
  EXPECT_THROW(g.next_below(0), std::invalid_argument);
}

TEST(L01_Random, UniformTensorRespectsBounds) {
  Generator g(8);
  Tensor u = Tensor::uniform({1000}, g, -3.f, -1.f);
  double sum = 0;
  for (float v : u.to_vector()) {
    ASSERT_GE(v, -3.f);
    ASSERT_LT(v, -1.f);
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, -2.0, 0.1);
  Generator a(8), b(8);
  EXPECT_EQ(Tensor::uniform({50}, a).to_vector(), Tensor::uniform({50}, b).to_vector());
}
