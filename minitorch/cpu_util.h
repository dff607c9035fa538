#pragma once
/// \file cpu_util.h
/// Helpers shared by the CPU kernels (minitorch/cpu_*.cpp): turning any input view into a plain f32
/// array, converting results back to bf16, walking strided layouts row by row.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch::cpu {

/// Elementwise loops below this size run on one thread (waking threads costs more).
inline constexpr std::int64_t kGrainElems = 1 << 15;
/// Rows of n elements per parallel chunk: about kGrainElems elements, at least one row.
inline std::int64_t row_grain(std::int64_t n) { return std::max<std::int64_t>(1, kGrainElems / std::max<std::int64_t>(n, 1)); }

/// x itself when it is contiguous f32, else a contiguous f32 copy (bf16 widened, strides walked).
Tensor f32_contiguous(const Tensor& x);
/// All of x's elements in row-major order into out (numel floats), widened to f32, rows in parallel.
void gather_f32(const Tensor& x, float* out);
/// A new contiguous f32 tensor of `shape` (uninitialised) on `device`: the kernels' inputs' device, cpu or
/// sim (a kernel's output lives in its inputs' pool).
Tensor f32_empty(const Shape& shape, Device device);
/// `t` (contiguous f32) converted to `dtype`: t itself for f32, else a new bf16 / f16 tensor.
Tensor f32_to(const Tensor& t, DType dtype);
/// Parallel conversions of n contiguous elements.
void widen_bf16(const std::uint16_t* in, float* out, std::int64_t n);
void narrow_bf16(const float* in, std::uint16_t* out, std::int64_t n);
/// The same for either 16-bit type (`t`: bf16 or f16).
void widen_half(DType t, const std::uint16_t* in, float* out, std::int64_t n);
void narrow_half(DType t, const float* in, std::uint16_t* out, std::int64_t n);

inline const float* cfp(const Tensor& t) { return static_cast<const float*>(t.raw_data()); }
inline float* fp(const Tensor& t) { return static_cast<float*>(t.raw_data()); }
inline const std::int32_t* ip(const Tensor& t) { return static_cast<const std::int32_t*>(t.raw_data()); }

/// A strided layout with adjacent dimensions merged where every operand allows it, seen as `rows`
/// rows of `inner` elements. Operand k's row r starts at `row_offset(k, r)` and steps by
/// `inner_stride[k]`. (Each operand's strides are aligned with `shape`; 0 means broadcast.)
struct RowLayout {
  Shape outer;                               // sizes of the merged outer dims
  std::vector<Shape> outer_strides;          // per operand
  std::vector<std::int64_t> inner_stride;    // per operand
  std::int64_t inner = 1, rows = 1;
  std::int64_t row_offset(std::size_t k, std::int64_t r) const;
};
RowLayout make_row_layout(const Shape& shape, const std::vector<Shape>& strides);

/// Strides of `t` as seen from a broadcast to `shape` (right-aligned; 0 on new and size-1 dims).
Shape broadcast_strides(const Tensor& t, const Shape& shape);

/// sum_i f(p[i]) over n contiguous floats, accumulated in double. 16 independent accumulators
/// (vectorised) keep the adds from waiting on one another.   f: double -> double
template <typename F>
inline double sum_double_map(const float* p, std::int64_t n, F f) {
  constexpr int W = 16;
  double acc[W] = {};
  std::int64_t i = 0;
  for (; i + W <= n; i += W)
    for (int j = 0; j < W; ++j) acc[j] += f(static_cast<double>(p[i + j]));
  double s = 0.0;
  for (; i < n; ++i) s += f(static_cast<double>(p[i]));
  for (int j = 0; j < W; ++j) s += acc[j];
  return s;
}
/// Sum of n contiguous floats, accumulated in double.
inline double sum_double(const float* p, std::int64_t n) {
  return sum_double_map(p, n, [](double x) { return x; });
}

}  // namespace minitorch::cpu
