// Neural-net CUDA kernels: LayerNorm forward / backward, embedding gather / scatter-add, and the
// fused AdamW update.
#include <algorithm>
#include <cmath>

#include "cuda/common.cuh"
#include "cuda/cuda.h"

namespace minitorch::cuda {

namespace {
// ---- LayerNorm ----
// naive: one thread per row.   x: (R, C) -> y: (R, C), mean, rstd: (R)
//   mean = sum(x) / C;  var = sum((x - mean)²) / C;  rstd = 1 / sqrt(var + eps)
//   y = (x - mean) * rstd * weight + bias
__global__ void layernorm_naive_kernel(const float* x, const float* w, const float* b, float* y, float* mean,
                                       float* rstd, std::int64_t R, std::int64_t C, float eps) {
  for (std::int64_t r = gtid(); r < R; r += gstride()) {
    const float* xr = x + r * C;
    float m = 0.f;
    for (std::int64_t j = 0; j < C; ++j) m += xr[j];
    m /= static_cast<float>(C);
    float var = 0.f;
    for (std::int64_t j = 0; j < C; ++j) var += (xr[j] - m) * (xr[j] - m);
    const float s = rsqrtf(var / static_cast<float>(C) + eps);
    for (std::int64_t j = 0; j < C; ++j) y[r * C + j] = (xr[j] - m) * s * w[j] + b[j];
    mean[r] = m;
    rstd[r] = s;
  }
}

// fast: one warp per row, two passes over the row (mean, then variance of x - mean: as stable as the CPU's).
// TX: x's and y's element type, TW: weight's and bias's (f32 or bf16 each, read as they are).
template <typename TX, typename TW>
__global__ void layernorm_warp_kernel(const TX* x, const TW* w, const TW* b, TX* y, float* mean, float* rstd,
                                      std::int64_t R, std::int64_t C, float eps) {
  for (std::int64_t r = gwarp(); r < R; r += nwarps()) {
    const TX* xr = x + r * C;
    float m = 0.f;
    for (std::int64_t j = lane(); j < C; j += kWarp) m += load(xr, j);
    m = warp_sum(m) / static_cast<float>(C);
    float var = 0.f;
    for (std::int64_t j = lane(); j < C; j += kWarp) var += (load(xr, j) - m) * (load(xr, j) - m);
    const float s = rsqrtf(warp_sum(var) / static_cast<float>(C) + eps);
    for (std::int64_t j = lane(); j < C; j += kWarp) store(y, r * C + j, (load(xr, j) - m) * s * load(w, j) + load(b, j));
    if (lane() == 0) {
      mean[r] = m;
      rstd[r] = s;
    }
  }
}

// forward: norm = (x - mean) * rstd;  y = norm * weight + bias
//   dnorm = dy * weight;  dx = rstd * (dnorm - mean_j(dnorm) - norm * mean_j(dnorm * norm))
// one warp per row.   dy, x: (R, C) -> dx: (R, C) in dy's type (TG); TX: x's, TW: weight's
template <typename TG, typename TX, typename TW>
__global__ void layernorm_dx_kernel(const TG* dy, const TX* x, const TW* w, const float* mean, const float* rstd,
                                    TG* dx, std::int64_t R, std::int64_t C) {
  for (std::int64_t r = gwarp(); r < R; r += nwarps()) {
    const TG* gr = dy + r * C;
    const TX* xr = x + r * C;
    const float m = mean[r], s = rstd[r];
    float sum_dn = 0.f, sum_dnn = 0.f;
    for (std::int64_t j = lane(); j < C; j += kWarp) {
      const float dn = load(gr, j) * load(w, j);
      sum_dn += dn;
      sum_dnn += dn * (load(xr, j) - m) * s;
    }
    const float mean_dn = warp_sum(sum_dn) / static_cast<float>(C);
    const float mean_dnn = warp_sum(sum_dnn) / static_cast<float>(C);
    for (std::int64_t j = lane(); j < C; j += kWarp)
      store(dx, r * C + j, s * (load(gr, j) * load(w, j) - mean_dn - (load(xr, j) - m) * s * mean_dnn));
  }
}

// dweight = sum_rows(dy * norm);  dbias = sum_rows(dy). A thread per column walking all R rows would
// leave most SMs idle (C = 768 threads for R = B·T = 8192 rows), so each thread sums one slab of
// kLnSlabRows rows of one column into partials (S, C), S = ceil(R / kLnSlabRows) (neighbouring threads
// read neighbouring columns: coalesced), and layernorm_dwdb_finish adds the S partials of each column
// in a fixed order (deterministic).
constexpr std::int64_t kLnSlabRows = 32;
template <typename TG, typename TX>
__global__ void layernorm_dwdb_slab_kernel(const TG* dy, const TX* x, const float* mean, const float* rstd, float* pw,
                                           float* pb, std::int64_t R, std::int64_t C, std::int64_t S) {
  for (std::int64_t k = gtid(); k < S * C; k += gstride()) {
    const std::int64_t s = k / C, j = k % C;
    const std::int64_t r0 = s * kLnSlabRows, r1 = r0 + kLnSlabRows < R ? r0 + kLnSlabRows : R;
    float aw = 0.f, ab = 0.f;
    for (std::int64_t r = r0; r < r1; ++r) {
      const float g = load(dy, r * C + j);
      aw += g * (load(x, r * C + j) - mean[r]) * rstd[r];
      ab += g;
    }
    pw[k] = aw;
    pb[k] = ab;
  }
}
// pw, pb: (S, C) -> dw, db: (C)
__global__ void layernorm_dwdb_finish_kernel(const float* pw, const float* pb, float* dw, float* db, std::int64_t S,
                                             std::int64_t C) {
  for (std::int64_t j = gtid(); j < C; j += gstride()) {
    float aw = 0.f, ab = 0.f;
    for (std::int64_t s = 0; s < S; ++s) {
      aw += pw[s * C + j];
      ab += pb[s * C + j];
    }
    dw[j] = aw;
    db[j] = ab;
  }
}

// ---- embedding ----
// out[i, c] = weight[ids[i], c]  (any element type: a copy)   weight: (V, C), ids: (n) -> out: (n, C)
template <typename T>
__global__ void embedding_kernel(const T* w, const std::int32_t* ids, T* out, std::int64_t n, std::int64_t C) {
  for (std::int64_t k = gtid(); k < n * C; k += gstride()) out[k] = w[static_cast<std::int64_t>(ids[k / C]) * C + k % C];
}

// forward: out[i, :] = weight[ids[i], :]  =>  dweight[v, :] += dy[i, :] for every i with ids[i] == v.
// Repeated ids collide, so the adds are atomic (the order, and so the last bits, vary run to run).
__global__ void embedding_backward_kernel(const float* dy, const std::int32_t* ids, float* dw, std::int64_t n,
                                          std::int64_t C) {
  for (std::int64_t k = gtid(); k < n * C; k += gstride())
    atomicAdd(dw + static_cast<std::int64_t>(ids[k / C]) * C + k % C, dy[k]);
}

// ---- AdamW ----
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²
//   p -= lr * (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd * p)
template <typename T, typename TG>
__global__ void adamw_kernel(T* p, const TG* g, float* m, float* v, std::int64_t n, float lr, float b1, float b2,
                             float eps, float wd, float inv_bc1, float inv_bc2) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) {
    const float gi = load(g, i);
    const float mi = b1 * m[i] + (1.f - b1) * gi;
    const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float pi = load(p, i);
    store(p, i, pi - lr * ((mi * inv_bc1) / (sqrtf(vi * inv_bc2) + eps) + wd * pi));
  }
}
}  // namespace

// x: (..., C), weight, bias: (C) -> y (..., C) dtype of x, mean, rstd (...) f32
ops::LayerNormOut CudaBackend::layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  use_device(x);
  const bool naive = naive_kernels();
  Tensor xf = naive ? f32_contiguous(x) : readable(x);
  Tensor wf = f32_contiguous(weight), bf = f32_contiguous(bias);
  if (!naive && weight.dtype() == DType::bf16 && bias.dtype() == DType::bf16 && weight.is_contiguous() &&
      bias.is_contiguous())
    wf = weight, bf = bias;  // both bf16: one weight type for the kernel
  const std::int64_t C = x.shape().back(), R = C ? x.numel() / C : 0;
  Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  Tensor y = Tensor::empty(x.shape(), xf.dtype(), x.device()), mean = f32_empty(row_shape, x.device()),
         rstd = f32_empty(row_shape, x.device());
  if (R) {
    if (naive) {
      layernorm_naive_kernel<<<grid_for(R), kThreads>>>(cfp(xf), cfp(wf), cfp(bf), fp(y), fp(mean), fp(rstd), R, C, eps);
    } else {
      with_elems(xf, wf, [&](auto tx, auto tw) {
        using TX = decltype(tx);
        using TW = decltype(tw);
        layernorm_warp_kernel<<<grid_for_warps(R), kThreads>>>(cptr<TX>(xf), cptr<TW>(wf), cptr<TW>(bf), ptr<TX>(y),
                                                               fp(mean), fp(rstd), R, C, eps);
      });
    }
    MT_CUDA_CHECK_LAUNCH();
  }
  return {f32_to(y, x.dtype()), mean, rstd};
}

// dy, x: (..., C), weight: (C), mean, rstd: (...) -> dx (dtype of dy), dweight, dbias (dtype of weight)
ops::LayerNormGrads CudaBackend::layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                    const Tensor& mean, const Tensor& rstd) {
  use_device(x);
  Tensor gf = readable(dy), xf = readable(x), wf = readable(weight);
  Tensor mf = f32_contiguous(mean), sf = f32_contiguous(rstd);
  const std::int64_t C = x.shape().back(), R = C ? x.numel() / C : 0;
  Tensor dx = Tensor::empty(x.shape(), gf.dtype(), x.device()), dw = f32_empty({C}, x.device()),
         db = f32_empty({C}, x.device());
  with_elems(gf, xf, [&](auto tg, auto tx) {
    using TG = decltype(tg);
    using TX = decltype(tx);
    if (R) {
      with_elem(wf, [&](auto tw) {
        using TW = decltype(tw);
        layernorm_dx_kernel<<<grid_for_warps(R), kThreads>>>(cptr<TG>(gf), cptr<TX>(xf), cptr<TW>(wf), cfp(mf),
                                                             cfp(sf), ptr<TG>(dx), R, C);
      });
      MT_CUDA_CHECK_LAUNCH();
    }
    if (C) {
      const std::int64_t S = std::max<std::int64_t>((R + kLnSlabRows - 1) / kLnSlabRows, 1);
      Tensor pw = f32_empty({S, C}, x.device()), pb = f32_empty({S, C}, x.device());
      layernorm_dwdb_slab_kernel<<<grid_for(S * C), kThreads>>>(cptr<TG>(gf), cptr<TX>(xf), cfp(mf), cfp(sf), fp(pw),
                                                                fp(pb), R, C, S);
      MT_CUDA_CHECK_LAUNCH();
      layernorm_dwdb_finish_kernel<<<grid_for(C), kThreads>>>(cfp(pw), cfp(pb), fp(dw), fp(db), S, C);
      MT_CUDA_CHECK_LAUNCH();
    }
  });
  return {f32_to(dx, dy.dtype()), f32_to(dw, weight.dtype()), f32_to(db, weight.dtype())};
}

// weight: (V, C), idx: (...) i32 -> out: (..., C), dtype of weight
Tensor CudaBackend::embedding(const Tensor& weight, const Tensor& idx) {
  use_device(weight);
  const std::int64_t V = weight.shape()[0], C = weight.shape()[1], n = idx.numel();
  Tensor ic = contiguous(idx), wc = contiguous(weight);
  check_ids("embedding", "id", ic, V, false, 0);
  Shape out_shape = idx.shape();
  out_shape.push_back(C);
  Tensor out = Tensor::empty(out_shape, weight.dtype(), weight.device());
  if (n * C > 0) {
    if (weight.dtype() == DType::bf16)
      embedding_kernel<<<grid_for(n * C), kThreads>>>(cbp(wc), cip(ic), bp(out), n, C);
    else
      embedding_kernel<<<grid_for(n * C), kThreads>>>(cfp(wc), cip(ic), fp(out), n, C);
    MT_CUDA_CHECK_LAUNCH();
  }
  return out;
}

// dy: (..., C), idx: (...) -> dweight: (V, C), dtype of dy
Tensor CudaBackend::embedding_backward(const Tensor& dy, const Tensor& idx, std::int64_t V) {
  use_device(dy);
  const std::int64_t C = dy.shape().back(), n = idx.numel();
  Tensor ic = contiguous(idx), gf = f32_contiguous(dy);
  check_ids("embedding_backward", "id", ic, V, false, 0);
  Tensor dw = f32_empty({V, C}, dy.device());
  if (V * C > 0) MT_CUDA_CHECK(cudaMemsetAsync(dw.raw_data(), 0, dw.nbytes()));
  if (n * C > 0) {
    embedding_backward_kernel<<<grid_for(n * C), kThreads>>>(cfp(gf), cip(ic), fp(dw), n, C);
    MT_CUDA_CHECK_LAUNCH();
  }
  return f32_to(dw, dy.dtype());
}

// param: (n) f32 or bf16 contiguous, grad: any view / dtype, m, v: (n) f32; all updated in place
void CudaBackend::adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const ops::AdamWParams& hp) {
  use_device(param);
  const std::int64_t n = param.numel();
  if (n == 0) return;
  Tensor g = readable(grad);
  const double t = static_cast<double>(hp.step);
  const float inv_bc1 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(hp.beta1), t)));
  const float inv_bc2 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(hp.beta2), t)));
  with_elems(param, g, [&](auto tp, auto tg) {
    using TP = decltype(tp);
    using TG = decltype(tg);
    adamw_kernel<<<grid_for(n), kThreads>>>(ptr<TP>(param), cptr<TG>(g), fp(m), fp(v), n, hp.lr, hp.beta1, hp.beta2,
                                            hp.eps, hp.weight_decay, inv_bc1, inv_bc2);
  });
  MT_CUDA_CHECK_LAUNCH();
}

}  // namespace minitorch::cuda
