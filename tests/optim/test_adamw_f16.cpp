// AdamW with f16 parameters (minitorch/dtype.h): like bf16, an f32 master copy takes the update and
// the f16 parameter is its rounding; K = 12 bytes per parameter.
#include <gtest/gtest.h>

#include "minitorch/random.h"
#include "optim/adamw.h"

using namespace minitorch;

namespace {
float round_f16(float x) { return f16_to_f32(f32_to_f16(x)); }
}  // namespace

TEST(L01_F16, AdamWWithF16ParamsKeepsAnF32Master) {
  Generator g(6);
  Tensor p = Tensor::randn({4, 8}, g).to(DType::f16);
  Tensor ref = p.to(DType::f32);
  p.set_requires_grad();
  ref.set_requires_grad();
  Tensor grad = Tensor::randn({4, 8}, g).to(DType::f16);
  p.set_grad(grad);
  ref.set_grad(grad.to(DType::f32));
  optim::AdamW opt(optim::NamedTensors{{"p", p}}, {.lr = 1e-2f}), opt_ref(optim::NamedTensors{{"p", ref}}, {.lr = 1e-2f});
  for (int s = 0; s < 3; ++s) {
    opt.step();
    opt_ref.step();
  }
  EXPECT_EQ(opt.state_bytes(), 32 * 12) << "f32 master + m + v";
  auto pv = p.to_vector(), rv = ref.to_vector();
  for (std::size_t i = 0; i < pv.size(); ++i) EXPECT_EQ(pv[i], round_f16(rv[i])) << "the master is exact, the f16 copy rounded";
}

