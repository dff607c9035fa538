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

using minitorch::DType;
using minitorch::Shape;
using minitorch::Tensor;

/// Every element of a host tensor (any view, any dtype) in row-major order of its shape, as double.
std::vector<double> read(const Tensor& t);
/// A new contiguous host tensor of `dtype` holding `values` (rounded once into the dtype).
Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype);

class ReferenceBackend : public minitorch::Backend {
 public:
  const char* name() const override { return "reference"; }

  void copy_(Tensor& dst, const Tensor& src) override;
  void fill_(Tensor& t, float value) override;

  Tensor binary(minitorch::BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape) override;
  Tensor unary(minitorch::UnaryOp op, const Tensor& a, float p0, float p1) override;
  void add_(Tensor& dst, const Tensor& src, float alpha) override;
  void scale_(Tensor& dst, float s) override;

  Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) override;
  Tensor max_last(const Tensor& x) override;
  double sum_squares(const Tensor& x) override;

  Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) override;

  Tensor softmax(const Tensor& x) override;
  Tensor softmax_backward(const Tensor& y, const Tensor& dy) override;
  Tensor causal_softmax(const Tensor& x, float scale) override;
  Tensor causal_softmax_backward(const Tensor& y, const Tensor& dy, float scale) override;
  minitorch::ops::LayerNormOut layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                         float eps) override;
  minitorch::ops::LayerNormGrads layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                    const Tensor& mean, const Tensor& rstd) override;
  Tensor gelu(const Tensor& x) override;
  Tensor gelu_backward(const Tensor& x, const Tensor& dy) override;
  Tensor embedding(const Tensor& weight, const Tensor& idx) override;
  Tensor embedding_backward(const Tensor& dy, const Tensor& idx, std::int64_t num_embeddings) override;
  minitorch::ops::CrossEntropyOut cross_entropy(const Tensor& logits, const Tensor& targets,
                                                std::int32_t ignore_index) override;
  Tensor cross_entropy_backward(const Tensor& probs, const Tensor& targets, const Tensor& dloss, std::int64_t count,
                                std::int32_t ignore_index) override;

  void adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v,
                  const minitorch::ops::AdamWParams& hp) override;
};

}  // namespace backend_ops
