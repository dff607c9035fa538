#pragma once
/// \file reference_backend.h
/// The naive reference the op table (tests/backend_ops/) holds the CPU kernels to: every Backend kernel as
/// the plainest loop over elements, read through the strides, accumulated in double, rounded once into
/// the result's dtype. No Eigen, no threads, no blocking: slow, and easy to check by eye against the
/// formulas in minitorch/backend.h and minitorch/ops.h. Host tensors only.
#include <cstdint>
#include <vector>

#include "minitorch/backend.h"

namespace backend_ops {

using minitorch::BinaryOp;
using minitorch::DType;
using minitorch::Shape;
using minitorch::Tensor;
using minitorch::UnaryOp;
namespace ops = minitorch::ops;  // backend_ops.def spells its types as namespace minitorch sees them

/// Every element of a host tensor (any view, any dtype) in row-major order of its shape, as double.
std::vector<double> read(const Tensor& t);
/// A new contiguous host tensor of `dtype` holding `values` (rounded once into the dtype).
Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype);

class ReferenceBackend : public minitorch::Backend {
 public:
  const char* name() const override { return "reference"; }

  // Every kernel of minitorch/backend_ops.def.
#define MINITORCH_BACKEND_OP(result, name, parameters, arguments) result name parameters override;
#include "minitorch/backend_ops.def"
};

}  // namespace backend_ops
