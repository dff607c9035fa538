#pragma once
/// \file strided.h
/// Element access through strides, with dtype conversion, for CPU tensors. Kernels use these to
/// turn any view (transposed, narrowed, expanded, bf16) into plain f32 arrays and back.
#include <cstdint>

#include "minitorch/tensor.h"

namespace minitorch {

/// True if `strides` are the row-major strides of `shape` (size-1 dims may have any stride).
bool is_row_major(const Shape& shape, const Shape& strides);
/// Element at element offset `off` (relative to the tensor's offset) as float.
float load_float(const Tensor& t, std::int64_t off);
/// All elements in row-major order into `out` (numel floats), through strides, widened to f32.
void load_floats(const Tensor& t, float* out);
/// Writes numel floats (row-major) into the tensor's elements, through strides, narrowed to its dtype.
void store_floats(Tensor& t, const float* in);
/// dst[i] = src[i] elementwise in row-major order (same shape; any strides and dtypes).
void copy_strided(Tensor& dst, const Tensor& src);
void fill_strided(Tensor& t, float value);
/// Row-major visit of the element offsets of `shape` under `strides`: fn(linear_index, offset).
template <typename F>
void for_each_offset(const Shape& shape, const Shape& strides, F&& fn) {
  const std::int64_t nd = static_cast<std::int64_t>(shape.size());
  std::int64_t n = shape_numel(shape);
  if (n == 0) return;
  if (nd == 0) {
    fn(std::int64_t{0}, std::int64_t{0});
    return;
  }
  Shape idx(shape.size(), 0);
  std::int64_t off = 0, inner = shape[nd - 1], inner_stride = strides[nd - 1];
  for (std::int64_t i = 0; i < n; i += inner) {
    for (std::int64_t j = 0; j < inner; ++j) fn(i + j, off + j * inner_stride);
    for (std::int64_t d = nd - 2; d >= 0; --d) {  // odometer over the outer dims
      off += strides[d];
      if (++idx[d] < shape[d]) break;
      off -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace minitorch
