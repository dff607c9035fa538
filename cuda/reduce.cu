// Reduction CUDA kernels: sum over dims, max over the last dim, the sum of squares (for global-norm
// clipping). Any sum over dims is reduced one group of adjacent reduced dims at a time, seen as
// (O, R, I) -> (O, I), like the CPU kernel (minitorch/cpu_reduce.cpp).
#include <algorithm>
#include <cfloat>
#include <utility>

#include "minitorch/reduce_plan.h"
#include "cuda/common.cuh"
#include "cuda/cuda.h"

namespace minitorch::cuda {

namespace {
// naive: one thread per output (o, i), walking r.   in: (O, R, I) -> out: (O, I)
// Coalesced when I is large (neighbouring threads read neighbouring i); slow when I == 1.
__global__ void reduce_ori_naive_kernel(const float* in, std::int64_t O, std::int64_t R, std::int64_t I, float* out) {
  for (std::int64_t k = gtid(); k < O * I; k += gstride()) {
    const std::int64_t o = k / I, i = k % I;
    const float* p = in + o * R * I + i;
    float acc = 0.f;
    for (std::int64_t r = 0; r < R; ++r) acc += p[r * I];
    out[k] = acc;
  }
}

// fast path for I > 1 with a long R (a bias gradient: (1, B·T, C) -> (C)). The naive kernel gives each of
// only O·I threads all R rows, a long serial walk on a few SMs; here each thread sums one slab of
// kSlabRows rows of one column into partial (O, S, I), S = ceil(R / kSlabRows), still coalesced along i;
// the naive kernel then adds the S partials. A fixed order: the same sum on every run.
constexpr std::int64_t kSlabRows = 64;
__global__ void reduce_ori_slab_kernel(const float* in, std::int64_t O, std::int64_t R, std::int64_t I,
                                       std::int64_t S, float* partial) {
  for (std::int64_t k = gtid(); k < O * S * I; k += gstride()) {
    const std::int64_t o = k / (S * I), s = (k / I) % S, i = k % I;
    const std::int64_t r0 = s * kSlabRows, r1 = r0 + kSlabRows < R ? r0 + kSlabRows : R;
    const float* p = in + o * R * I + i;
    float acc = 0.f;
    for (std::int64_t r = r0; r < r1; ++r) acc += p[r * I];
    partial[k] = acc;
  }
}

// fast path for I == 1 (the common "sum the last dim"): one warp per row, lanes stride the row and
// a butterfly shuffle adds the 32 partial sums.   in: (O, R) -> out: (O)
__global__ void reduce_rows_warp_kernel(const float* in, std::int64_t O, std::int64_t R, float* out) {
  for (std::int64_t o = gwarp(); o < O; o += nwarps()) {
    const float* p = in + o * R;
    float acc = 0.f;
    for (std::int64_t r = lane(); r < R; r += kWarp) acc += p[r];
    acc = warp_sum(acc);
    if (lane() == 0) out[o] = acc;
  }
}

// x: (rows, N) -> out: (rows), one warp per row
__global__ void max_rows_kernel(const float* x, std::int64_t rows, std::int64_t N, float* out) {
  for (std::int64_t r = gwarp(); r < rows; r += nwarps()) {
    const float* p = x + r * N;
    float m = -FLT_MAX;
    for (std::int64_t j = lane(); j < N; j += kWarp) m = fmaxf(m, p[j]);
    m = warp_max(m);
    if (lane() == 0) out[r] = m;
  }
}

// Sum of x² in double: each block writes one partial sum (shared-memory tree), then one block adds
// the partials in a fixed order, so the result does not depend on scheduling.
__global__ void sum_squares_partial_kernel(const float* x, std::int64_t n, double* partial) {
  __shared__ double warp_part[kThreads / kWarp];
  double acc = 0.0;
  for (std::int64_t i = gtid(); i < n; i += gstride()) acc += static_cast<double>(x[i]) * x[i];
  acc = warp_sum(acc);
  if (lane() == 0) warp_part[threadIdx.x / kWarp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double s = 0.0;
    for (int w = 0; w < kThreads / kWarp; ++w) s += warp_part[w];
    partial[blockIdx.x] = s;
  }
}
__global__ void sum_partials_kernel(const double* partial, int n, double* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += partial[i];
    *out = s;
  }
}
}  // namespace

// x: any shape, dims sorted unique non-negative -> sum over dims (keepdim keeps size-1 dims), dtype of x
Tensor CudaBackend::sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  use_device(x);
  const ReducePlan plan = plan_sum(x.shape(), dims, keepdim);
  if (x.numel() == 0) {
    Tensor out = f32_empty(plan.out_shape, x.device());
    fill(out, 0.f);
    return f32_to(out, x.dtype());
  }
  Tensor cur = f32_contiguous(x);
  for (const auto& st : plan.steps) {  // (O, R, I) -> (O, I)
    Tensor next = f32_empty({st.outer * st.inner}, x.device());
    const std::int64_t S = (st.reduced + kSlabRows - 1) / kSlabRows;
    if (st.inner == 1 && !naive_kernels()) {
      reduce_rows_warp_kernel<<<grid_for_warps(st.outer), kThreads>>>(cfp(cur), st.outer, st.reduced, fp(next));
    } else if (S > 1 && st.outer * st.inner < (1 << 20) && !naive_kernels()) {  // few outputs, long columns
      Tensor partial = f32_empty({st.outer * S * st.inner}, x.device());
      reduce_ori_slab_kernel<<<grid_for(st.outer * S * st.inner), kThreads>>>(cfp(cur), st.outer, st.reduced,
                                                                              st.inner, S, fp(partial));
      MT_CUDA_CHECK_LAUNCH();
      reduce_ori_naive_kernel<<<grid_for(st.outer * st.inner), kThreads>>>(cfp(partial), st.outer, S, st.inner,
                                                                          fp(next));
    } else {
      reduce_ori_naive_kernel<<<grid_for(st.outer * st.inner), kThreads>>>(cfp(cur), st.outer, st.reduced, st.inner,
                                                                          fp(next));
    }
    MT_CUDA_CHECK_LAUNCH();
    cur = next;
  }
  if (!plan.steps.empty()) return f32_to(cur.view(plan.out_shape), x.dtype());
  Tensor out = f32_empty(plan.out_shape, x.device());  // nothing reduced (empty dims): a plain copy
  copy_into(out, cur.view(plan.out_shape));
  return f32_to(out, x.dtype());
}

// x: (..., N), N >= 1 -> (...), dtype of x
Tensor CudaBackend::max_last(const Tensor& x) {
  use_device(x);
  Tensor xf = f32_contiguous(x);
  const std::int64_t N = x.shape().back(), rows = N ? x.numel() / N : 0;
  Tensor out = f32_empty(Shape(x.shape().begin(), x.shape().end() - 1), x.device());
  if (rows) {
    max_rows_kernel<<<grid_for_warps(rows), kThreads>>>(cfp(xf), rows, N, fp(out));
    MT_CUDA_CHECK_LAUNCH();
  }
  return f32_to(out, x.dtype());
}

// x: any -> sum of x² over all elements, in double
double CudaBackend::sum_squares(const Tensor& x) {
  use_device(x);
  const std::int64_t n = x.numel();
  if (n == 0) return 0.0;
  Tensor xf = f32_contiguous(x);
  const unsigned blocks = std::min<unsigned>(grid_for(n), 1024);
  // doubles viewed through an f32 buffer of twice the length (the allocator only knows bytes)
  Tensor scratch = f32_empty({2 * (static_cast<std::int64_t>(blocks) + 1)}, x.device());
  double* partial = static_cast<double*>(scratch.raw_data());
  sum_squares_partial_kernel<<<blocks, kThreads>>>(cfp(xf), n, partial);
  MT_CUDA_CHECK_LAUNCH();
  sum_partials_kernel<<<1, 1>>>(partial, static_cast<int>(blocks), partial + blocks);
  MT_CUDA_CHECK_LAUNCH();
  double result = 0.0;
  MT_CUDA_CHECK(cudaMemcpy(&result, partial + blocks, sizeof(double), cudaMemcpyDeviceToHost));
  return result;
}

}  // namespace minitorch::cuda
