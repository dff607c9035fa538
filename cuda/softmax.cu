// Softmax-family CUDA kernels: softmax, causal (masked, scaled) softmax, cross-entropy fused with
// its softmax, and the backwards. Each row subtracts its max before exp (stable).
//
// naive: one thread per row walks the row three times (max, sum, write); neighbouring threads read
//        addresses N floats apart, so loads are not coalesced and long rows leave most SMs idle.
// fast:  one warp per row; lane l reads j = l, l + 32, ... (coalesced) and warp shuffles combine the
//        32 partial max / sums in registers (no shared memory, no __syncthreads).
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

#include "cuda/common.cuh"
#include "cuda/cuda.h"

namespace minitorch::cuda {

namespace {
// ---- naive: one thread per row ----
// y[r, j] = exp(scale x[r, j] - m) / sum_{k < n_r} exp(scale x[r, k] - m) for j < n_r, 0 after;
// n_r = N (plain) or r % N + 1 (causal, rows of a (T, T) score matrix).
__global__ void softmax_naive_kernel(const float* x, float* y, std::int64_t rows, std::int64_t N, float scale,
                                     bool causal) {
  for (std::int64_t r = gtid(); r < rows; r += gstride()) {
    const float* xr = x + r * N;
    float* yr = y + r * N;
    const std::int64_t n = causal ? r % N + 1 : N;
    float m = -FLT_MAX;
    for (std::int64_t j = 0; j < n; ++j) m = fmaxf(m, scale * xr[j]);
    float s = 0.f;
    for (std::int64_t j = 0; j < n; ++j) s += expf(scale * xr[j] - m);
    for (std::int64_t j = 0; j < n; ++j) yr[j] = expf(scale * xr[j] - m) / s;
    for (std::int64_t j = n; j < N; ++j) yr[j] = 0.f;
  }
}

// ---- fast: one warp per row ----
// The row softmax of the first n of N entries (zeros after); returns log sum_j exp(scale x[j]).
// TI, TO: the element types of x and y (f32, or bf16 read as it is and widened in registers).
template <typename TI, typename TO>
__device__ float warp_softmax_row(const TI* xr, TO* yr, std::int64_t n, std::int64_t N, float scale) {
  float m = -FLT_MAX;
  for (std::int64_t j = lane(); j < n; j += kWarp) m = fmaxf(m, scale * load(xr, j));
  m = warp_max(m);
  float s = 0.f;
  for (std::int64_t j = lane(); j < n; j += kWarp) s += expf(scale * load(xr, j) - m);
  s = warp_sum(s);
  const float inv = 1.f / s;
  for (std::int64_t j = lane(); j < n; j += kWarp) store(yr, j, expf(scale * load(xr, j) - m) * inv);
  for (std::int64_t j = n + lane(); j < N; j += kWarp) store(yr, j, 0.f);
  return m + logf(s);
}

template <typename T>
__global__ void softmax_warp_kernel(const T* x, T* y, std::int64_t rows, std::int64_t N, float scale, bool causal) {
  for (std::int64_t r = gwarp(); r < rows; r += nwarps())
    warp_softmax_row(x + r * N, y + r * N, causal ? r % N + 1 : N, N, scale);
}

// forward: y = softmax(scale x) over j < n_r  =>  dx = scale * y * (dy - sum_{j<n_r}(dy * y)), 0 after
// TY, TG: f32 or bf16 each; dx in dy's type.
template <typename TY, typename TG>
__global__ void softmax_backward_warp_kernel(const TY* y, const TG* dy, TG* dx, std::int64_t rows, std::int64_t N,
                                             float scale, bool causal) {
  for (std::int64_t r = gwarp(); r < rows; r += nwarps()) {
    const TY* yr = y + r * N;
    const TG* gr = dy + r * N;
    TG* dr = dx + r * N;
    const std::int64_t n = causal ? r % N + 1 : N;
    float s = 0.f;
    for (std::int64_t j = lane(); j < n; j += kWarp) s += load(gr, j) * load(yr, j);
    s = warp_sum(s);
    for (std::int64_t j = lane(); j < n; j += kWarp) store(dr, j, scale * load(yr, j) * (load(gr, j) - s));
    for (std::int64_t j = n + lane(); j < N; j += kWarp) store(dr, j, 0.f);
  }
}

// Cross-entropy forward, fused: probs = softmax(logits[r]); row_loss[r] = lse_r - logits[r, t_r]
// (0 for ignored rows).   logits, probs: (N, V), targets: (N), row_loss: (N)
// T: the logits' element type (f32 or bf16, read as it is).
template <typename T>
__global__ void cross_entropy_kernel(const T* x, const std::int32_t* tg, float* probs, float* row_loss,
                                     std::int64_t N, std::int64_t V, std::int32_t ignore) {
  for (std::int64_t r = gwarp(); r < N; r += nwarps()) {
    const float lse = warp_softmax_row(x + r * V, probs + r * V, V, V, 1.f);
    if (lane() == 0) row_loss[r] = tg[r] == ignore ? 0.f : lse - load(x, r * V + tg[r]);
  }
}

// loss = sum(row_loss) / count in one block: per-thread doubles, then a fixed-order tree, so the
// loss is the same on every run (atomicAdd would make it depend on scheduling).
__global__ void mean_loss_kernel(const float* row_loss, std::int64_t N, std::int64_t count, float* loss) {
  __shared__ double part[kThreads];
  double acc = 0.0;
  for (std::int64_t i = threadIdx.x; i < N; i += blockDim.x) acc += row_loss[i];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = count ? static_cast<float>(part[0] / static_cast<double>(count)) : nanf("");
}

// forward: loss = mean_r (lse_r - x[r, t_r])  =>  dx[r, j] = dloss * (probs[r, j] - [j == t_r]) / count
// Index: the integer type of the row / column arithmetic (int32 when N·V fits).
template <typename Index>
__global__ void cross_entropy_backward_kernel(const float* probs, const std::int32_t* tg, const float* dloss,
                                              float* dx, std::int64_t N, std::int64_t V, std::int64_t count,
                                              std::int32_t ignore) {
  const float s = count > 0 ? *dloss / static_cast<float>(count) : 0.f;
  for (std::int64_t i = gtid(); i < N * V; i += gstride()) {
    const Index r = static_cast<Index>(i) / static_cast<Index>(V), j = static_cast<Index>(i) - r * static_cast<Index>(V);
    const std::int32_t t = tg[r];
    dx[i] = (t == ignore || count == 0) ? 0.f : s * (probs[i] - (j == t ? 1.f : 0.f));
  }
}

// Shared driver of softmax and causal softmax.   x: (..., N) -> y: (..., N), dtype of x
Tensor run_softmax(const Tensor& x, float scale, bool causal) {
  use_device(x);
  const bool naive = naive_kernels();
  Tensor xr = naive ? f32_contiguous(x) : readable(x);
  Tensor y = Tensor::empty(x.shape(), xr.dtype(), x.device());
  const std::int64_t N = x.shape().back(), rows = N ? x.numel() / N : 0;
  if (rows) {
    if (naive) {
      softmax_naive_kernel<<<grid_for(rows), kThreads>>>(cfp(xr), fp(y), rows, N, scale, causal);
    } else {
      with_elem(xr, [&](auto t) {
        using T = decltype(t);
        softmax_warp_kernel<<<grid_for_warps(rows), kThreads>>>(cptr<T>(xr), ptr<T>(y), rows, N, scale, causal);
      });
    }
    MT_CUDA_CHECK_LAUNCH();
  }
  return f32_to(y, x.dtype());
}

// y, dy: (..., N) -> dx: (..., N), dtype of dy
Tensor run_softmax_backward(const Tensor& y, const Tensor& dy, float scale, bool causal) {
  use_device(y);
  Tensor yr = readable(y), gr = readable(dy);
  Tensor dx = Tensor::empty(y.shape(), gr.dtype(), y.device());
  const std::int64_t N = y.shape().back(), rows = N ? y.numel() / N : 0;
  if (rows) {
    with_elems(yr, gr, [&](auto ty, auto tg) {
      using TY = decltype(ty);
      using TG = decltype(tg);
      softmax_backward_warp_kernel<<<grid_for_warps(rows), kThreads>>>(cptr<TY>(yr), cptr<TG>(gr), ptr<TG>(dx), rows,
                                                                       N, scale, causal);
    });
    MT_CUDA_CHECK_LAUNCH();
  }
  return f32_to(dx, dy.dtype());
}
}  // namespace

Tensor CudaBackend::softmax(const Tensor& x) { return run_softmax(x, 1.f, false); }
Tensor CudaBackend::softmax_backward(const Tensor& y, const Tensor& dy) { return run_softmax_backward(y, dy, 1.f, false); }
Tensor CudaBackend::causal_softmax(const Tensor& x, float scale) { return run_softmax(x, scale, true); }
Tensor CudaBackend::causal_softmax_backward(const Tensor& y, const Tensor& dy, float scale) {
  return run_softmax_backward(y, dy, scale, true);
}

// logits: (N, V), targets: (N) i32 -> {loss scalar f32, probs (N, V) f32, count}
ops::CrossEntropyOut CudaBackend::cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index) {
  use_device(logits);
  const std::int64_t N = logits.shape()[0], V = logits.shape()[1];
  Tensor tc = contiguous(targets);
  const std::int64_t count = check_ids("cross_entropy", "target", tc, V, true, ignore_index);
  Tensor xf = readable(logits);
  Tensor probs = f32_empty({N, V}, logits.device()), row_loss = f32_empty({N}, logits.device());
  Tensor loss = f32_empty({}, logits.device());
  if (N) {
    with_elem(xf, [&](auto t) {
      using T = decltype(t);
      cross_entropy_kernel<<<grid_for_warps(N), kThreads>>>(cptr<T>(xf), cip(tc), fp(probs), fp(row_loss), N, V,
                                                            ignore_index);
    });
    MT_CUDA_CHECK_LAUNCH();
  }
  mean_loss_kernel<<<1, kThreads>>>(cfp(row_loss), N, count, fp(loss));  // PyTorch: mean of nothing is nan
  MT_CUDA_CHECK_LAUNCH();
  ops::CrossEntropyOut out;
  out.loss = loss;
  out.probs = probs;
  out.count = count;
  return out;
}

// probs: (N, V), targets: (N), dloss: scalar -> dlogits (N, V) f32
Tensor CudaBackend::cross_entropy_backward(const Tensor& probs, const Tensor& targets, const Tensor& dloss,
                                           std::int64_t count, std::int32_t ignore_index) {
  use_device(probs);
  const std::int64_t N = probs.shape()[0], V = probs.shape()[1];
  Tensor pf = f32_contiguous(probs), tc = contiguous(targets), gf = f32_contiguous(dloss);
  check_ids("cross_entropy_backward", "target", tc, V, true, ignore_index);
  Tensor dx = f32_empty({N, V}, probs.device());
  if (N * V > 0) {
    if (N * V <= INT32_MAX)
      cross_entropy_backward_kernel<std::int32_t><<<grid_for(N * V), kThreads>>>(cfp(pf), cip(tc), cfp(gf), fp(dx), N,
                                                                                V, count, ignore_index);
    else
      cross_entropy_backward_kernel<std::int64_t><<<grid_for(N * V), kThreads>>>(cfp(pf), cip(tc), cfp(gf), fp(dx), N,
                                                                                V, count, ignore_index);
    MT_CUDA_CHECK_LAUNCH();
  }
  return dx;
}

}  // namespace minitorch::cuda
