#pragma once
/// \file regions.h
/// Megatron's two conjugate operators (Shoeybi et al. 2019, §3), the whole communication of tensor
/// parallelism without a vocabulary split:
///
///   f: forward identity,   backward all-reduce (sum) of the gradient over the tensor group
///   g: forward all-reduce (sum) over the tensor group,   backward identity
///
/// Why they are conjugate: a column-parallel layer reads the same x on every rank, so x's gradient is
/// the sum of every rank's contribution — f's backward adds them. A row-parallel layer gives each rank a
/// partial sum of the output — g's forward adds them — and every rank then holds the whole output, whose
/// gradient is the same everywhere, so g passes it back untouched. One MLP (column → row) or one attention
/// (heads → projection) is f … g: one all-reduce forward (g), one backward (f).
///
/// \code
///   Tensor h = tp::f(x, tensor_group);                       // x: (B, T, C), replicated
///   Tensor y = tp::g(ag::linear(local(h), W_r, {}), tensor_group);
/// \endcode
/// Each all-reduce moves a tensor of the activation's size; the group's stats count it (dist/process_group.h).
#include "dist/process_group.h"
#include "minitorch/tensor.h"

namespace minitorch::tp {

/// Identity forward; the gradient is all-reduced (summed) over `group` in backward.   x: any shape
Tensor f(const Tensor& x, dist::ProcessGroup& group);
/// All-reduce (sum) over `group` forward; the gradient passes unchanged.   x: any shape, f32 or bf16
Tensor g(const Tensor& x, dist::ProcessGroup& group);

}  // namespace minitorch::tp
