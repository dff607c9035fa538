// The fused AdamW kernel against the scalar formula, step by step.
#include <cmath>

#include "test_ops_util.h"

using namespace ops_test;

namespace {
// One AdamW step of one element, in double, written as in the paper / ops.h.
void ref_step(double& p, double g, double& m, double& v, const ops::AdamWParams& hp) {
  m = hp.beta1 * m + (1 - hp.beta1) * g;
  v = hp.beta2 * v + (1 - hp.beta2) * g * g;
  const double mh = m / (1 - std::pow(hp.beta1, hp.step)), vh = v / (1 - std::pow(hp.beta2, hp.step));
  p -= hp.lr * (mh / (std::sqrt(vh) + hp.eps) + hp.weight_decay * p);
}
}  // namespace

TEST(L03_T4_AdamW, MatchesScalarFormulaOverSteps) {
  Generator g(51);
  const std::int64_t n = 100'003;  // uneven: several threads' chunks and a ragged tail
  Tensor p = randn({n}, g);
  Tensor m = Tensor::zeros({n}), v = Tensor::zeros({n});
  const auto p0 = p.to_vector();
  std::vector<double> rp(p0.begin(), p0.end()), rm(n, 0), rv(n, 0);
  ops::AdamWParams hp{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0};
  Threads two(2);
  for (int t = 1; t <= 5; ++t) {
    hp.step = t;
    Tensor grad = randn({n}, g);
    auto gv = grad.to_vector();
    ops::adamw_step(p, grad, m, v, hp);
    for (std::int64_t i = 0; i < n; ++i) ref_step(rp[i], gv[i], rm[i], rv[i], hp);
  }
  EXPECT_TRUE(all_close(p, std::vector<float>(rp.begin(), rp.end()), 1e-6f, 1e-5f));
  EXPECT_TRUE(all_close(m, std::vector<float>(rm.begin(), rm.end()), 1e-7f, 1e-5f));
  EXPECT_TRUE(all_close(v, std::vector<float>(rv.begin(), rv.end()), 1e-8f, 1e-5f));
}

TEST(L03_T4_AdamW, FirstStepMovesByLearningRate) {
  // At t = 1 with wd = 0 the bias-corrected update is lr * g / (|g| + eps): a step of lr against the sign.
  Tensor p = Tensor::from_vector({1.f, -2.f, 0.5f}, {3});
  Tensor grad = Tensor::from_vector({0.3f, -4.f, 1e-3f}, {3});
  Tensor m = Tensor::zeros({3}), v = Tensor::zeros({3});
  ops::adamw_step(p, grad, m, v, {0.1f, 0.9f, 0.999f, 1e-8f, 0.f, 1});
  EXPECT_TRUE(all_close(p, {0.9f, -1.9f, 0.4f}, 1e-5f, 1e-5f));
}

TEST(L03_T4_AdamW, Bf16AndStridedGradientsAndBf16Params) {
  Generator g(52);
  const std::int64_t R = 50, C = 100, n = R * C;
  ops::AdamWParams hp{1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3};
  Tensor grad = randn({R, C}, g, DType::bf16);
  Tensor grad_t = randn({C, R}, g, DType::bf16).transpose(0, 1);  // strided bf16 view (R, C)
  Tensor p = randn({R, C}, g), m = uniform({R, C}, g, -0.1f, 0.1f), v = uniform({R, C}, g, 0.f, 0.1f);
  auto pv = p.to_vector(), mv = m.to_vector(), vv = v.to_vector();
  Tensor ph = p.to(DType::bf16);
  Tensor m2 = m.clone(), v2 = v.clone();
  auto phv = ph.to_vector();
  std::vector<float> ref(n), refh(n);
  auto gv = grad.to_vector(), gtv = grad_t.contiguous().to_vector();
  for (std::int64_t i = 0; i < n; ++i) {
    double rp = pv[i], rm = mv[i], rv = vv[i];
    ref_step(rp, gv[i], rm, rv, hp);
    ref[i] = static_cast<float>(rp);
    double hpp = phv[i], hm = mv[i], hv = vv[i];
    ref_step(hpp, gtv[i], hm, hv, hp);
    refh[i] = static_cast<float>(hpp);
  }
  ops::adamw_step(p, grad, m, v, hp);  // f32 param, bf16 grad
  EXPECT_TRUE(all_close(p, ref, 1e-6f, 1e-5f));
  ops::adamw_step(ph, grad_t, m2, v2, hp);  // bf16 param (rounded once per step), strided bf16 grad
  EXPECT_EQ(ph.dtype(), DType::bf16);
  EXPECT_TRUE(all_close(ph, refh, 1e-6f, 4e-3f));
}

TEST(L01_OpsAdamW, BadArguments) {
  Tensor p = Tensor::zeros({4}), m = Tensor::zeros({4}), v = Tensor::zeros({4});
  ops::AdamWParams hp{1e-3f, 0.9f, 0.999f, 1e-8f, 0.f, 1};
  EXPECT_INVALID_ARG(ops::adamw_step(p, Tensor::zeros({5}), m, v, hp), "adamw_step", "(4)", "(5)");
  Tensor mh = Tensor::zeros({4}, DType::bf16);
  EXPECT_INVALID_ARG(ops::adamw_step(p, p, mh, v, hp), "adamw_step", "f32");
  hp.step = 0;
  EXPECT_INVALID_ARG(ops::adamw_step(p, p, m, v, hp), "adamw_step", "step");
}
