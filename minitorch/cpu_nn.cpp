// Neural-net CPU kernels: LayerNorm, tanh-GELU, embedding, each with its backward.
#include "minitorch/cpu_eigen.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "minitorch/cpu_backend.h"
#include "minitorch/cpu_util.h"
#include "minitorch/parallel.h"

namespace minitorch::cpu {

namespace {
constexpr std::int64_t kRowBlock = 32;  // rows per partial sum of dweight / dbias (fixed: thread-count independent)
}  // namespace

// x: (..., C), weight, bias: (C)  ->  y: (..., C) dtype of x, mean, rstd: (...) f32
//   mean = sum(x) / C;  var = sum((x - mean)²) / C;  rstd = 1 / sqrt(var + eps)
//   y = (x - mean) * rstd * weight + bias
ops::LayerNormOut CpuBackend::layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  Tensor xf = f32_contiguous(x), wf = f32_contiguous(weight), bf = f32_contiguous(bias);
  const std::int64_t C = x.shape().back(), R = C ? x.numel() / C : 0;
  Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  Tensor y = f32_empty(x.shape(), x.device()), mean = f32_empty(row_shape, x.device()), rstd = f32_empty(row_shape, x.device());
  const float *px = cfp(xf), *pw = cfp(wf), *pb = cfp(bf);
  float *py = fp(y), *pm = fp(mean), *ps = fp(rstd);
  parallel_for(R, row_grain(C), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* xr = px + r * C;
      float* yr = py + r * C;
      const float m = static_cast<float>(sum_double(xr, C) / static_cast<double>(C));
      double var = 0.0;
#pragma omp simd reduction(+ : var)
      for (std::int64_t j = 0; j < C; ++j) var += static_cast<double>(xr[j] - m) * static_cast<double>(xr[j] - m);
      const float s = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(C) + static_cast<double>(eps)));
      for (std::int64_t j = 0; j < C; ++j) yr[j] = (xr[j] - m) * s * pw[j] + pb[j];
      pm[r] = m;
      ps[r] = s;
    }
  });
  return {f32_to(y, x.dtype()), mean, rstd};
}

// forward: norm = (x - mean) * rstd;  y = norm * weight + bias
//   dnorm = dy * weight
//   dx = rstd * (dnorm - mean_j(dnorm) - norm * mean_j(dnorm * norm))
//   dweight = sum_rows(dy * norm);  dbias = sum_rows(dy)
// dy, x: (..., C), weight: (C), mean, rstd: (...)  ->  dx (..., C) dtype of dy, dweight, dbias (C) dtype of weight
ops::LayerNormGrads CpuBackend::layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                   const Tensor& mean, const Tensor& rstd) {
  Tensor gf = f32_contiguous(dy), xf = f32_contiguous(x), wf = f32_contiguous(weight);
  Tensor mf = f32_contiguous(mean), sf = f32_contiguous(rstd);
  const std::int64_t C = x.shape().back(), R = C ? x.numel() / C : 0;
  const std::int64_t nblk = (R + kRowBlock - 1) / kRowBlock;
  Tensor dx = f32_empty(x.shape(), x.device());
  std::vector<float> part_w(static_cast<std::size_t>(nblk * C), 0.f), part_b(static_cast<std::size_t>(nblk * C), 0.f);
  const float *pg = cfp(gf), *px = cfp(xf), *pw = cfp(wf), *pm = cfp(mf), *ps = cfp(sf);
  float* pd = fp(dx);
  parallel_for(nblk, 1, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<float> norm(static_cast<std::size_t>(C)), dnorm(static_cast<std::size_t>(C));
    for (std::int64_t blk = b0; blk < b1; ++blk) {
      float* dw = part_w.data() + blk * C;
      float* db = part_b.data() + blk * C;
      for (std::int64_t r = blk * kRowBlock; r < std::min(R, (blk + 1) * kRowBlock); ++r) {
        const float* gr = pg + r * C;
        const float* xr = px + r * C;
        float* dr = pd + r * C;
        const float m = pm[r], s = ps[r];
        float sum_dn = 0.f, sum_dnn = 0.f;
#pragma omp simd reduction(+ : sum_dn, sum_dnn)
        for (std::int64_t j = 0; j < C; ++j) {
          norm[j] = (xr[j] - m) * s;
          dnorm[j] = gr[j] * pw[j];
          sum_dn += dnorm[j];
          sum_dnn += dnorm[j] * norm[j];
          dw[j] += gr[j] * norm[j];
          db[j] += gr[j];
        }
        const float mean_dn = sum_dn / static_cast<float>(C), mean_dnn = sum_dnn / static_cast<float>(C);
        for (std::int64_t j = 0; j < C; ++j) dr[j] = s * (dnorm[j] - mean_dn - norm[j] * mean_dnn);
      }
    }
  });
  Tensor dweight = f32_empty({C}, x.device()), dbias = f32_empty({C}, x.device());
  for (std::int64_t j = 0; j < C; ++j) {
    double aw = 0.0, ab = 0.0;
    for (std::int64_t blk = 0; blk < nblk; ++blk) {
      aw += part_w[blk * C + j];
      ab += part_b[blk * C + j];
    }
    fp(dweight)[j] = static_cast<float>(aw);
    fp(dbias)[j] = static_cast<float>(ab);
  }
  return {f32_to(dx, dy.dtype()), f32_to(dweight, weight.dtype()), f32_to(dbias, weight.dtype())};
}

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
}

// x: any shape -> y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))), dtype of x
Tensor CpuBackend::gelu(const Tensor& x) {
  Tensor xf = f32_contiguous(x);
  Tensor y = f32_empty(x.shape(), x.device());
  const float* in = cfp(xf);
  float* out = fp(y);
  parallel_for(x.numel(), kGrainElems, [&](std::int64_t s, std::int64_t e) {
    Eigen::Map<const Eigen::ArrayXf> a(in + s, e - s);
    Eigen::Map<Eigen::ArrayXf>(out + s, e - s) = 0.5f * a * (1.f + (kGeluScale * (a + 0.044715f * a.cube())).tanh());
  });
  return f32_to(y, x.dtype());
}

// forward: y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x³)
//   dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh² u) sqrt(2/pi) (1 + 3 * 0.044715 x²);  dx = dy * dy/dx
Tensor CpuBackend::gelu_backward(const Tensor& x, const Tensor& dy) {
  Tensor xf = f32_contiguous(x), gf = f32_contiguous(dy);
  Tensor dx = f32_empty(x.shape(), x.device());
  const float *in = cfp(xf), *pg = cfp(gf);
  float* out = fp(dx);
  parallel_for(x.numel(), kGrainElems, [&](std::int64_t s, std::int64_t e) {
    Eigen::Map<const Eigen::ArrayXf> a(in + s, e - s), g(pg + s, e - s);
    Eigen::ArrayXf t = (kGeluScale * (a + 0.044715f * a.cube())).tanh();
    Eigen::Map<Eigen::ArrayXf>(out + s, e - s) =
        g * (0.5f * (1.f + t) + 0.5f * a * (1.f - t.square()) * kGeluScale * (1.f + 3.f * 0.044715f * a.square()));
  });
  return f32_to(dx, dy.dtype());
}

namespace {
// Checks every id of `idx` (contiguous i32) is in [0, V); names the op, the id and its position.
void check_ids(const char* op, const std::int32_t* ids, std::int64_t n, std::int64_t V) {
  for (std::int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= V)
      throw std::invalid_argument(std::string(op) + ": id " + std::to_string(ids[i]) + " at position " +
                                  std::to_string(i) + " is out of range [0, " + std::to_string(V) + ")");
}
}  // namespace

// weight: (V, C), idx: (...) i32  ->  out: (..., C), out[n, :] = weight[idx[n], :], dtype of weight
Tensor CpuBackend::embedding(const Tensor& weight, const Tensor& idx) {
  const std::int64_t V = weight.shape()[0], C = weight.shape()[1], n = idx.numel();
  Tensor ic = idx.contiguous(), wc = weight.contiguous();
  const std::int32_t* ids = ip(ic);
  check_ids("embedding", ids, n, V);
  Shape out_shape = idx.shape();
  out_shape.push_back(C);
  Tensor out = Tensor::empty(out_shape, weight.dtype(), weight.device());
  const std::size_t row_bytes = static_cast<std::size_t>(C) * dtype_size(weight.dtype());
  const char* src = static_cast<const char*>(wc.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  parallel_for(n, row_grain(C), [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) std::memcpy(dst + i * row_bytes, src + ids[i] * row_bytes, row_bytes);
  });
  return out;
}

// forward: out[n, :] = weight[idx[n], :]  =>  dweight[v, :] = sum over n with idx[n] == v of dy[n, :]
// dy: (..., C), idx: (...)  ->  dweight: (V, C), dtype of dy. Each thread owns a range of vocabulary
// rows and adds the positions in order, so the sums do not depend on the number of threads.
Tensor CpuBackend::embedding_backward(const Tensor& dy, const Tensor& idx, std::int64_t V) {
  const std::int64_t C = dy.shape().back(), n = idx.numel();
  Tensor ic = idx.contiguous(), gf = f32_contiguous(dy);
  const std::int32_t* ids = ip(ic);
  check_ids("embedding_backward", ids, n, V);
  Tensor dw = f32_empty({V, C}, dy.device());
  const float* pg = cfp(gf);
  float* pw = fp(dw);
  parallel_for(V, row_grain(C), [&](std::int64_t v0, std::int64_t v1) {
    std::fill(pw + v0 * C, pw + v1 * C, 0.f);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t v = ids[i];
      if (v < v0 || v >= v1) continue;
      float* dr = pw + v * C;
      const float* gr = pg + i * C;
      for (std::int64_t j = 0; j < C; ++j) dr[j] += gr[j];
    }
  });
  return f32_to(dw, dy.dtype());
}

}  // namespace minitorch::cpu
