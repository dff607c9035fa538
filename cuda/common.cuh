#pragma once
/// \file common.cuh
/// Device-side helpers for the kernel files: bf16 loads/stores, warp reductions, launch sizes.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/backend.h"
#include "cuda/check.h"
#include "minitorch/tensor.h"

namespace minitorch::cuda {

inline constexpr int kThreads = 256;  // threads per block for elementwise kernels
inline constexpr int kWarp = 32;

/// Blocks for a grid-stride loop over n elements (capped: each thread then takes several).
inline unsigned grid_for(std::int64_t n, int threads = kThreads) {
  const std::int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(b, 1, 1 << 16));
}
/// Blocks for one warp per row, `kThreads / 32` rows per block.
inline unsigned grid_for_warps(std::int64_t rows) { return grid_for(rows * kWarp); }

// Grid-stride loop index helpers: for (i = gtid(); i < n; i += gstride()).
__device__ inline std::int64_t gtid() { return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline std::int64_t gstride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }
/// Global warp index and the lane within it.
__device__ inline std::int64_t gwarp() { return gtid() / kWarp; }
__device__ inline std::int64_t nwarps() { return gstride() / kWarp; }
__device__ inline int lane() { return static_cast<int>(threadIdx.x % kWarp); }

// Loads and stores in f32, whatever the storage type.
__device__ inline float load(const float* p, std::int64_t i) { return p[i]; }
__device__ inline float load(const __nv_bfloat16* p, std::int64_t i) { return __bfloat162float(p[i]); }
__device__ inline void store(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ inline void store(__nv_bfloat16* p, std::int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

/// Sum / max over the 32 lanes of a warp; every lane gets the result (butterfly shuffles).
__device__ inline float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline double warp_sum(double v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Calls f(T{}) with T the element type of a contiguous f32 or bf16 tensor (float or __nv_bfloat16): one
/// kernel template serves both, and a bf16 tensor is read and written as it is, never widened into a
/// temporary f32 copy (each element is widened in registers, computed in f32, rounded once on store:
/// the same bits as the CPU's kernels).
template <typename F>
void with_elem(const Tensor& t, F&& f) {
  if (t.dtype() == DType::bf16) f(__nv_bfloat16{}); else f(float{});
}
/// The same over two tensors: f(A{}, B{}) with A, B the element types of a and b.
template <typename F>
void with_elems(const Tensor& a, const Tensor& b, F&& f) {
  with_elem(a, [&](auto ta) { with_elem(b, [&](auto tb) { f(ta, tb); }); });
}
template <typename T> const T* cptr(const Tensor& t) { return static_cast<const T*>(t.raw_data()); }
template <typename T> T* ptr(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

inline const float* cfp(const Tensor& t) { return static_cast<const float*>(t.raw_data()); }
inline float* fp(const Tensor& t) { return static_cast<float*>(t.raw_data()); }
inline const std::int32_t* cip(const Tensor& t) { return static_cast<const std::int32_t*>(t.raw_data()); }
inline __nv_bfloat16* bp(const Tensor& t) { return static_cast<__nv_bfloat16*>(t.raw_data()); }
inline const __nv_bfloat16* cbp(const Tensor& t) { return static_cast<const __nv_bfloat16*>(t.raw_data()); }

}  // namespace minitorch::cuda
