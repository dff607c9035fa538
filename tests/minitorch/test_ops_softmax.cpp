// Softmax, causal softmax and cross-entropy (with their backwards) against double references.
#include <cmath>

#include "test_ops_util.h"

using namespace ops_test;

namespace {
// Softmax of each row of n entries (first `valid` of them; the rest 0) of scale * x, in double.
std::vector<float> ref_softmax(const std::vector<float>& x, std::int64_t n, float scale = 1.f, bool causal = false) {
  std::vector<float> y(x.size(), 0.f);
  for (std::size_t r = 0; r * n < x.size(); ++r) {
    const std::int64_t valid = causal ? static_cast<std::int64_t>(r % n) + 1 : n;
    double m = -INFINITY, s = 0;
    for (std::int64_t j = 0; j < valid; ++j) m = std::max(m, static_cast<double>(scale) * x[r * n + j]);
    for (std::int64_t j = 0; j < valid; ++j) s += std::exp(static_cast<double>(scale) * x[r * n + j] - m);
    for (std::int64_t j = 0; j < valid; ++j) y[r * n + j] = static_cast<float>(std::exp(static_cast<double>(scale) * x[r * n + j] - m) / s);
  }
  return y;
}
}  // namespace

TEST(L03_T1_Softmax, RowsSumToOneAndMatchReference) {
  Generator g(31);
  Tensor x = randn({4, 5, 37}, g);
  Tensor y = ops::softmax(x);
  auto yv = y.to_vector();
  for (int r = 0; r < 20; ++r) {
    double s = 0;
    for (int j = 0; j < 37; ++j) s += yv[r * 37 + j];
    EXPECT_NEAR(s, 1.0, 1e-6) << "row " << r;
  }
  EXPECT_TRUE(all_close(y, ref_softmax(x.to_vector(), 37), 1e-7f, 1e-5f));
  // stable for huge logits (a naive exp overflows to inf / nan)
  Tensor big = Tensor::from_vector({1000.f, 1001.f, 1002.f, -1000.f}, {1, 4});
  EXPECT_TRUE(all_close(ops::softmax(big), {0.09003057f, 0.24472847f, 0.66524096f, 0.f}, 1e-7f, 1e-5f));
  // strided (transposed) and bf16 inputs
  Tensor xt = x.transpose(1, 2);  // (4, 37, 5)
  EXPECT_TRUE(all_close(ops::softmax(xt), ref_softmax(xt.contiguous().to_vector(), 5), 1e-7f, 1e-5f));
  Tensor h = x.to(DType::bf16);
  Tensor yh = ops::softmax(h);
  EXPECT_EQ(yh.dtype(), DType::bf16);
  EXPECT_TRUE(all_close(yh, ref_softmax(h.to_vector(), 37), 1e-4f, 8e-3f));
}

TEST(L03_T2_SoftmaxBackward, MatchesFormulaAndFiniteDifferences) {
  Generator g(32);
  const std::int64_t R = 3, N = 11;
  Tensor x = randn({R, N}, g), dy = randn({R, N}, g);
  Tensor y = ops::softmax(x);
  Tensor dx = ops::softmax_backward(y, dy);
  auto yv = y.to_vector(), gv = dy.to_vector(), xv = x.to_vector();
  std::vector<float> ref(R * N);
  for (int r = 0; r < R; ++r) {
    double s = 0;
    for (int j = 0; j < N; ++j) s += static_cast<double>(gv[r * N + j]) * yv[r * N + j];
    for (int j = 0; j < N; ++j) ref[r * N + j] = static_cast<float>(yv[r * N + j] * (gv[r * N + j] - s));
  }
  EXPECT_TRUE(all_close(dx, ref, 1e-6f, 1e-5f));
  // d/dx_i of sum(dy * softmax(x)), central differences on the double reference forward
  for (int i = 0; i < R * N; i += 4) {
    auto xp = xv, xm = xv;
    xp[i] += 1e-3f;
    xm[i] -= 1e-3f;
    auto yp = ref_softmax(xp, N), ym = ref_softmax(xm, N);
    double d = 0;
    for (int j = 0; j < R * N; ++j) d += gv[j] * (static_cast<double>(yp[j]) - ym[j]);
    EXPECT_NEAR(dx.to_vector()[i], d / (xp[i] - xm[i]), 2e-3) << "element " << i << " (row " << i / N << ")";
  }
}

// The mistake the max subtraction prevents: exp(1000) is inf in f32, and inf / inf is NaN.
TEST(L03_T1_Softmax, LogitsOfAThousandStayFiniteAndExact) {
  Tensor x = Tensor::from_vector({1000.f, 999.f, 998.f, -1000.f, 0.f, 1000.f}, {2, 3});
  const std::vector<float> y = ops::softmax(x).to_vector();
  const double e1 = std::exp(-1.0), e2 = std::exp(-2.0), z = 1 + e1 + e2;
  const std::vector<double> want = {1 / z, e1 / z, e2 / z, 0, 0, 1};
  for (std::size_t i = 0; i < y.size(); ++i) {
    EXPECT_TRUE(std::isfinite(y[i])) << "softmax overflowed at " << i << " (exp of a logit of 1000 is inf: subtract the row's max)";
    EXPECT_NEAR(y[i], want[i], 1e-6) << i;
  }
}

// The same logits through cross-entropy (task L03.3; apart from L03.1's tests, which then need no L03.3).
TEST(L03_T3_CrossEntropy, LogitsOfAThousandGiveTheExactLoss) {
  Tensor x = Tensor::from_vector({1000.f, 999.f, 998.f, -1000.f, 0.f, 1000.f}, {2, 3});
  const double z = 1 + std::exp(-1.0) + std::exp(-2.0);
  auto ce = ops::cross_entropy(x, Tensor::from_ints({0, 2}, {2}));
  EXPECT_NEAR(ce.loss.item(), std::log(z) / 2, 1e-5) << "cross-entropy of large logits: log-sum-exp needs the max too";
}

TEST(L03_T1_Softmax, CausalIsZeroAboveDiagonal) {
  Generator g(33);
  const std::int64_t T = 9;
  const float scale = 0.35f;
  Tensor x = randn({2, 3, T, T}, g);
  Tensor y = ops::causal_softmax(x, scale);
  auto yv = y.to_vector();
  for (std::int64_t r = 0; r < 6 * T; ++r) {
    const std::int64_t i = r % T;
    double s = 0;
    for (std::int64_t j = 0; j < T; ++j) {
      if (j > i) {
        EXPECT_EQ(yv[r * T + j], 0.f) << "row " << r << " col " << j;
      }
      s += yv[r * T + j];
    }
    EXPECT_NEAR(s, 1.0, 1e-6) << "row " << r;
  }
  EXPECT_TRUE(all_close(y, ref_softmax(x.to_vector(), T, scale, true), 1e-7f, 1e-5f));
  // a negative scale flips which entry is the max
  EXPECT_TRUE(all_close(ops::causal_softmax(x, -2.f), ref_softmax(x.to_vector(), T, -2.f, true), 1e-7f, 1e-5f));
}

TEST(L03_T2_SoftmaxBackward, CausalMatchesFormula) {
  Generator g(34);
  const std::int64_t T = 7;
  const float scale = 0.5f;
  Tensor x = randn({4, T, T}, g), dy = randn({4, T, T}, g);
  Tensor y = ops::causal_softmax(x, scale);
  Tensor dx = ops::causal_softmax_backward(y, dy, scale);
  auto yv = y.to_vector(), gv = dy.to_vector();
  std::vector<float> ref(yv.size(), 0.f);
  for (std::int64_t r = 0; r < 4 * T; ++r) {
    const std::int64_t n = r % T + 1;
    double s = 0;
    for (std::int64_t j = 0; j < n; ++j) s += static_cast<double>(gv[r * T + j]) * yv[r * T + j];
    for (std::int64_t j = 0; j < n; ++j) ref[r * T + j] = static_cast<float>(scale * yv[r * T + j] * (gv[r * T + j] - s));
  }
  EXPECT_TRUE(all_close(dx, ref, 1e-6f, 1e-5f));
  // numeric check of one entry below the diagonal: d sum(dy * y) / d x[0, 5, 2]
  auto xv = x.to_vector();
  const std::size_t at = 5 * T + 2;
  auto xp = xv, xm = xv;
  xp[at] += 1e-3f;
  xm[at] -= 1e-3f;
  auto yp = ref_softmax(xp, T, scale, true), ym = ref_softmax(xm, T, scale, true);
  double d = 0;
  for (std::size_t j = 0; j < yv.size(); ++j) d += gv[j] * (static_cast<double>(yp[j]) - ym[j]);
  EXPECT_NEAR(dx.to_vector()[at], d / (xp[at] - xm[at]), 2e-3);
}

TEST(L03_T3_CrossEntropy, WithIgnoreIndex) {
  Generator g(35);
  const std::int64_t N = 6, V = 13;
  Tensor logits = randn({N, V}, g);
  Tensor targets = Tensor::from_ints({3, -1, 0, 12, -1, 7}, {N});
  auto out = ops::cross_entropy(logits, targets, -1);
  EXPECT_EQ(out.count, 4);
  EXPECT_EQ(out.loss.shape(), Shape{});
  EXPECT_EQ(out.probs.shape(), (Shape{N, V}));
  auto lv = logits.to_vector();
  auto tv = targets.to_int_vector();
  double total = 0;
  for (int r = 0; r < N; ++r) {
    if (tv[r] < 0) continue;
    double m = -INFINITY, s = 0;
    for (int j = 0; j < V; ++j) m = std::max(m, static_cast<double>(lv[r * V + j]));
    for (int j = 0; j < V; ++j) s += std::exp(lv[r * V + j] - m);
    total += m + std::log(s) - lv[r * V + tv[r]];
  }
  EXPECT_NEAR(out.loss.item(), total / 4, 1e-6);
  EXPECT_TRUE(all_close(out.probs, ref_softmax(lv, V), 1e-7f, 1e-5f));

  Tensor dloss = Tensor::scalar(2.f);
  Tensor dl = ops::cross_entropy_backward(out.probs, targets, dloss, out.count, -1);
  auto pv = out.probs.to_vector();
  std::vector<float> ref(N * V, 0.f);
  for (int r = 0; r < N; ++r) {
    if (tv[r] < 0) continue;  // ignored rows get no gradient
    for (int j = 0; j < V; ++j) ref[r * V + j] = 2.f * (pv[r * V + j] - (j == tv[r] ? 1.f : 0.f)) / 4.f;
  }
  EXPECT_TRUE(all_close(dl, ref, 1e-7f, 1e-6f));

  // another ignore value, and the numerics of huge logits
  Tensor huge = Tensor::from_vector({1e4f, 0.f, -1e4f, 5.f, 5.f, 5.f}, {2, 3});
  auto o2 = ops::cross_entropy(huge, Tensor::from_ints({2, 1}, {2}), 7);
  EXPECT_EQ(o2.count, 2);
  EXPECT_NEAR(o2.loss.item(), (2e4 + std::log(3.0)) / 2, 1e-2);
  auto o3 = ops::cross_entropy(huge, Tensor::from_ints({100, 1}, {2}), 100);
  EXPECT_EQ(o3.count, 1);
  EXPECT_NEAR(o3.loss.item(), std::log(3.0), 1e-6);
}

TEST(L01_OpsSoftmax, CrossEntropyBadInputs) {
  Generator g(36);
  Tensor logits = randn({3, 5}, g);
  EXPECT_INVALID_ARG(ops::cross_entropy(logits, Tensor::from_ints({0, 5, 1}, {3})), "cross_entropy", "target 5",
                     "[0, 5)");
  EXPECT_INVALID_ARG(ops::cross_entropy(logits, Tensor::from_ints({0, 1}, {2})), "cross_entropy", "(3, 5)", "(2)");
  EXPECT_INVALID_ARG(ops::cross_entropy(logits, logits), "cross_entropy", "i32");
  EXPECT_INVALID_ARG(ops::softmax_backward(logits, randn({5, 3}, g)), "softmax_backward", "(3, 5)", "(5, 3)");
  EXPECT_INVALID_ARG(ops::causal_softmax(randn({2, 3, 4}, g), 1.f), "causal_softmax", "(2, 3, 4)");
}
