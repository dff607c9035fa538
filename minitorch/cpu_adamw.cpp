// The AdamW update as one fused pass over (param, grad, m, v): memory-bound, so each element is
// read and written once. Work goes in L1-sized chunks so Eigen can vectorise sqrt and divide.
#include "minitorch/cpu_eigen.h"
#include <algorithm>
#include <cmath>

#include "minitorch/cpu_backend.h"
#include "minitorch/cpu_util.h"
#include "minitorch/parallel.h"
#include "minitorch/not_implemented.h"

namespace minitorch::cpu {

// param: (n) f32, bf16 or f16, grad: (n) any view / dtype, m, v: (n) f32; all updated in place:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²
//   p -= lr * (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd * p)
void CpuBackend::adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const ops::AdamWParams& hp) {
  const std::int64_t n = param.numel();
  const bool grad_half = is_half(grad.dtype()) && grad.is_contiguous();
  const DType gt = grad.dtype(), pt = param.dtype();
  Tensor g = grad_half ? grad : f32_contiguous(grad);
  const float b1 = hp.beta1, b2 = hp.beta2, lr = hp.lr, eps = hp.eps, wd = hp.weight_decay;
  const float inv_bc1 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(b1), static_cast<double>(hp.step))));
  const float inv_bc2 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(b2), static_cast<double>(hp.step))));
  const bool param_half = is_half(pt);
  float* pm = fp(m);
  float* pv = fp(v);
  parallel_for(n, kGrainElems, [&](std::int64_t s, std::int64_t e) {
    constexpr std::int64_t kChunk = 1024;
    float gbuf[kChunk], pbuf[kChunk];
    for (std::int64_t c0 = s; c0 < e; c0 += kChunk) {
      const std::int64_t len = std::min(kChunk, e - c0);
      const float* gp;
      if (grad_half) {
        const auto* gh = static_cast<const std::uint16_t*>(g.raw_data()) + c0;
        for (std::int64_t i = 0; i < len; ++i) gbuf[i] = half_to_f32(gt, gh[i]);
        gp = gbuf;
      } else {
        gp = cfp(g) + c0;
      }
      float* pp;
      if (param_half) {
        const auto* ph = static_cast<const std::uint16_t*>(param.raw_data()) + c0;
        for (std::int64_t i = 0; i < len; ++i) pbuf[i] = half_to_f32(pt, ph[i]);
        pp = pbuf;
      } else {
        pp = fp(param) + c0;
      }
      Eigen::Map<const Eigen::ArrayXf> ga(gp, len);
      Eigen::Map<Eigen::ArrayXf> pa(pp, len), ma(pm + c0, len), va(pv + c0, len);
      // BEGIN SOLUTION L03.4
      ma = b1 * ma + (1.f - b1) * ga;
      va = b2 * va + (1.f - b2) * ga.square();
      pa -= lr * ((ma * inv_bc1) / ((va * inv_bc2).sqrt() + eps) + wd * pa);
      // END SOLUTION
      if (param_half) {
        auto* ph = static_cast<std::uint16_t*>(param.raw_data()) + c0;
        for (std::int64_t i = 0; i < len; ++i) ph[i] = f32_to_half(pt, pbuf[i]);
      }
    }
  });
}

}  // namespace minitorch::cpu
