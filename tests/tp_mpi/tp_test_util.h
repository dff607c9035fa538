#pragma once
// Comparing a tensor-parallel result with the unsplit one (tests/tp_mpi/).
#include <algorithm>
#include <cmath>

#include "minitorch/tensor.h"

namespace mt_tp {

/// max |a − b| over all elements, in f32 (a, b: same shape; 1e30 if the sizes differ).
inline double max_abs_diff(const minitorch::Tensor& a, const minitorch::Tensor& b) {
  using minitorch::DType;
  const auto x = a.to(DType::f32).contiguous().to_vector(), y = b.to(DType::f32).contiguous().to_vector();
  if (x.size() != y.size()) return 1e30;
  double d = 0;
  for (std::size_t i = 0; i < x.size(); ++i) d = std::max(d, static_cast<double>(std::fabs(x[i] - y[i])));
  return d;
}

/// max |a − b| / max(1, max |b|).
inline double rel_diff(const minitorch::Tensor& a, const minitorch::Tensor& b) {
  double scale = 1;
  for (float v : b.to(minitorch::DType::f32).contiguous().to_vector()) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  return max_abs_diff(a, b) / scale;
}

}  // namespace mt_tp
