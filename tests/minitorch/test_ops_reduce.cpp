// Reductions against plain-loop references.
#include <algorithm>
#include <limits>

#include "test_ops_util.h"

using namespace ops_test;

namespace {
// Sum over `dims` of a row-major tensor of shape `s`, keeping size-1 dims (reference, double).
std::vector<float> ref_sum(const std::vector<float>& x, const Shape& s, const std::vector<int>& dims) {
  Shape os = s;
  for (int d : dims) os[d] = 1;
  auto sx = strides_of(s), so = strides_of(os);
  std::vector<double> acc(static_cast<std::size_t>(minitorch::shape_numel(os)), 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::int64_t o = 0;
    for (std::size_t d = 0; d < s.size(); ++d)
      if (os[d] != 1) o += (static_cast<std::int64_t>(i) / sx[d] % s[d]) * so[d];
    acc[o] += x[i];
  }
  return std::vector<float>(acc.begin(), acc.end());
}
}  // namespace

TEST(L01_OpsReduce, SumOverDimsMatchesReference) {
  Generator g(11);
  const Shape s{3, 4, 5, 6};
  Tensor x = randn(s, g);
  auto v = x.to_vector();
  const std::vector<std::vector<int>> dim_sets = {{0}, {1}, {3}, {0, 1}, {1, 2}, {0, 2}, {1, 3}, {0, 3}, {0, 1, 2, 3}, {0, 2, 3}};
  for (const auto& ds : dim_sets) {
    std::vector<std::int64_t> dims(ds.begin(), ds.end());
    Tensor k = ops::sum(x, dims, true);
    Shape ks = s;
    for (int d : ds) ks[d] = 1;
    EXPECT_EQ(k.shape(), ks);
    EXPECT_TRUE(all_close(k, ref_sum(v, s, ds), 1e-5f, 1e-5f)) << "dims " << ds.size() << " first " << ds[0];
    Tensor n = ops::sum(x, dims, false);
    Shape ns;
    for (int d = 0; d < 4; ++d)
      if (std::find(ds.begin(), ds.end(), d) == ds.end()) ns.push_back(s[d]);
    EXPECT_EQ(n.shape(), ns);
    EXPECT_TRUE(all_close(n, ref_sum(v, s, ds), 1e-5f, 1e-5f));
  }
  EXPECT_EQ(ops::sum(x).shape(), Shape{});
  EXPECT_TRUE(all_close(ops::sum(x, {-1}), ref_sum(v, s, {3}), 1e-5f, 1e-5f));
}

TEST(L01_OpsReduce, SumOfStridedAndBf16Inputs) {
  Generator g(12);
  Tensor x = randn({64, 48}, g);
  Tensor xt = x.transpose(0, 1);  // (48, 64)
  auto v = xt.contiguous().to_vector();
  EXPECT_TRUE(all_close(ops::sum(xt, {0}), ref_sum(v, {48, 64}, {0}), 1e-5f, 1e-5f));
  EXPECT_TRUE(all_close(ops::sum(xt, {1}), ref_sum(v, {48, 64}, {1}), 1e-5f, 1e-5f));
  Tensor h = x.to(DType::bf16);
  Tensor hs = ops::sum(h, {0});
  EXPECT_EQ(hs.dtype(), DType::bf16);
  auto r = ref_sum(h.to_vector(), {64, 48}, {0});
  for (auto& e : r) e = round_bf16(e);
  EXPECT_TRUE(all_close(hs, r, 0, 0));
}

TEST(L01_OpsReduce, LongSumIsAccurate) {
  // 3 million copies of 0.1f: a naive float accumulator drifts by ~1%; double stays exact to ~1e-7.
  const std::int64_t n = 3'000'000;
  Tensor x = Tensor::full({n}, 0.1f);
  const double expect = static_cast<double>(0.1f) * static_cast<double>(n);
  EXPECT_NEAR(ops::sum(x).item(), expect, expect * 1e-7);
  EXPECT_NEAR(ops::mean(x).item(), 0.1f, 1e-7);
  EXPECT_NEAR(ops::sum_squares(x), static_cast<double>(0.1f) * static_cast<double>(0.1f) * n, 1e-6);
}

TEST(L01_OpsReduce, MeanMaxAndSumSquares) {
  Generator g(13);
  Tensor x = randn({7, 9, 11}, g);
  auto v = x.to_vector();
  auto r = ref_sum(v, {7, 9, 11}, {1});
  for (auto& e : r) e /= 9.f;
  EXPECT_TRUE(all_close(ops::mean(x, {1}), r, 1e-6f, 1e-5f));

  Tensor mx = ops::max_last(x);
  EXPECT_EQ(mx.shape(), (Shape{7, 9}));
  std::vector<float> rm(63, -std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < v.size(); ++i) rm[i / 11] = std::max(rm[i / 11], v[i]);
  EXPECT_TRUE(all_close(mx, rm, 0, 0));
  Tensor mt = ops::max_last(x.transpose(1, 2));  // (7, 11, 9): max over the original dim 1
  auto vt = x.transpose(1, 2).contiguous().to_vector();
  std::vector<float> rt(77, -std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < vt.size(); ++i) rt[i / 9] = std::max(rt[i / 9], vt[i]);
  EXPECT_TRUE(all_close(mt, rt, 0, 0));

  double ss = 0;
  for (float e : v) ss += static_cast<double>(e) * e;
  EXPECT_NEAR(ops::sum_squares(x), ss, 1e-9 * ss);
  EXPECT_NEAR(ops::sum_squares(x.transpose(0, 2)), ss, 1e-9 * ss);
  Tensor h = x.to(DType::bf16);
  double sh = 0;
  for (float e : h.to_vector()) sh += static_cast<double>(e) * e;
  EXPECT_NEAR(ops::sum_squares(h), sh, 1e-9 * sh);
}

TEST(L01_OpsReduce, ThreadCountDoesNotChangeSums) {
  Generator g(14);
  Tensor x = randn({333, 1001}, g);
  Tensor s1 = ops::sum(x, {0}), r1 = ops::sum(x, {1});
  double q1 = ops::sum_squares(x);
  Threads two(2);
  EXPECT_EQ(ops::sum(x, {0}).to_vector(), s1.to_vector());
  EXPECT_EQ(ops::sum(x, {1}).to_vector(), r1.to_vector());
  EXPECT_EQ(ops::sum_squares(x), q1);
}

TEST(L01_OpsReduce, BadDimsNameTheShape) {
  Generator g(15);
  Tensor x = randn({2, 3}, g);
  EXPECT_INVALID_ARG(ops::sum(x, {2}), "sum", "dim 2", "(2, 3)");
  EXPECT_INVALID_ARG(ops::sum(x, {1, -1}), "sum", "twice");
  EXPECT_INVALID_ARG(ops::mean(x, {-3}), "mean", "(2, 3)");
  EXPECT_INVALID_ARG(ops::max_last(Tensor::scalar(1.f)), "max_last");
}
