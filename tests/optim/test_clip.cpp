// L03 Optim: global-norm gradient clipping (torch.nn.utils.clip_grad_norm_).
#include <gtest/gtest.h>

#include <cmath>

#include "minitorch/ops.h"
#include "optim/clip.h"

using namespace minitorch;

namespace {
Tensor with_grad(const Shape& shape, const std::vector<float>& g) {
  Tensor p = Tensor::zeros(shape).set_requires_grad();
  p.set_grad(Tensor::from_vector(g, shape));
  return p;
}
double norm_of(const std::vector<Tensor>& ps) {
  double s = 0;
  for (auto& p : ps)
    if (p.grad().defined()) s += ops::sum_squares(p.grad());
  return std::sqrt(s);
}
}  // namespace

TEST(L03_Optim, ClipScalesToMaxNormAndReturnsPreClipNorm) {
  // grads (3, 4) and (12): norm = √(9 + 16 + 144) = 13
  std::vector<Tensor> ps{with_grad({2}, {3, 4}), with_grad({1}, {12}), Tensor::zeros({3}).set_requires_grad()};
  double norm = optim::clip_grad_norm(ps, 1.0);
  EXPECT_NEAR(norm, 13.0, 1e-9);
  EXPECT_NEAR(norm_of(ps), 1.0, 1e-6);
  const double coef = 1.0 / (13.0 + 1e-6);
  EXPECT_NEAR(ps[0].grad().to_vector()[0], 3 * coef, 1e-7);
  EXPECT_NEAR(ps[1].grad().to_vector()[0], 12 * coef, 1e-7);
  EXPECT_FALSE(ps[2].grad().defined()) << "a parameter without grad stays without";
}

TEST(L03_Optim, ClipLeavesSmallGradientsAlone) {
  std::vector<Tensor> ps{with_grad({2}, {0.3f, 0.4f})};
  double norm = optim::clip_grad_norm(ps, 1.0);
  EXPECT_NEAR(norm, 0.5, 1e-7);
  EXPECT_EQ(ps[0].grad().to_vector(), (std::vector<float>{0.3f, 0.4f}));
}

TEST(L03_Optim, ClipCountsATensorGivenTwiceOnce) {
  Tensor p = with_grad({2}, {3, 4});
  double norm = optim::clip_grad_norm(std::vector<Tensor>{p, p}, 2.5);
  EXPECT_NEAR(norm, 5.0, 1e-9);
  EXPECT_NEAR(norm_of({p}), 2.5, 1e-6) << "scaled once, not twice";
}

TEST(L03_Optim, ClipPartsForShardedGradients) {
  std::vector<Tensor> ps{with_grad({2}, {3, 4})};
  EXPECT_NEAR(optim::grad_sum_squares(ps), 25.0, 1e-9);
  EXPECT_DOUBLE_EQ(optim::clip_coefficient(5.0, 10.0), 1.0);
  EXPECT_NEAR(optim::clip_coefficient(5.0, 1.0), 1.0 / (5.0 + 1e-6), 1e-15);
  EXPECT_DOUBLE_EQ(optim::clip_coefficient(INFINITY, 1.0), 1.0);
  optim::scale_grads(ps, 0.5f);
  EXPECT_EQ(ps[0].grad().to_vector(), (std::vector<float>{1.5f, 2.0f}));
  EXPECT_THROW(optim::clip_grad_norm(ps, 0.0), std::invalid_argument);
}
