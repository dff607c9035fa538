#pragma once
/// \file functions.h
/// Differentiable ops: each computes its result with minitorch::ops and, when a gradient is needed,
/// records a Node whose backward is written next to it (autograd/functions_*.cpp).
///
/// \code
///   using namespace minitorch;
///   namespace ag = minitorch::autograd;
///   Generator gen(0);
///   Tensor x = Tensor::randn({4, 8}, gen);
///   Tensor w = Tensor::randn({16, 8}, gen).set_requires_grad();
///   Tensor b = Tensor::zeros({16}).set_requires_grad();
///   Tensor y = ag::gelu(ag::linear(x, w, b));  // (4, 16)
///   ag::backward(ag::mean(y));                 // fills w.grad(), b.grad()
/// \endcode
#include <cstdint>
#include <vector>

#include "autograd/engine.h"
#include "minitorch/ops.h"

namespace minitorch::autograd {

// ---- elementwise (NumPy broadcasting; the backward sums a gradient back to each input's shape) ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
/// a * s + t for scalars s, t.
Tensor affine(const Tensor& a, float s, float t = 0.f);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor pow(const Tensor& a, float exponent);

// ---- reductions ----
Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);

// ---- views (share storage forward; backward reshapes / transposes / pads the gradient) ----
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, std::int64_t d0, std::int64_t d1);
Tensor permute(const Tensor& x, const Shape& dims);
Tensor narrow(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t length);
Tensor contiguous(const Tensor& x);
/// dtype conversion (the gradient converts back): the mixed-precision cast.
Tensor to_dtype(const Tensor& x, DType dtype);

// ---- linear algebra ----
/// Batched matmul with optional transposes (see ops::matmul for the shapes).
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
/// y = x W^T + b, like torch.nn.functional.linear.   x: (..., in), W: (out, in), b: (out) or undefined
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

// ---- neural-net ops ----
/// Softmax over the last dim.
Tensor softmax(const Tensor& x);
/// softmax(scale * x) over j <= i of the last two dims (T, T); zero above the diagonal.
Tensor causal_softmax(const Tensor& x, float scale);
/// LayerNorm over the last dim.   x: (..., C), weight, bias: (C)
Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);
/// tanh-approximated GELU (GPT-2's).
Tensor gelu(const Tensor& x);
/// Row lookup.   weight: (V, C), idx: (...) i32 -> (..., C)
Tensor embedding(const Tensor& weight, const Tensor& idx);
/// Mean cross-entropy.   logits: (N, V), targets: (N) i32 -> scalar; targets == ignore_index skipped.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index = -1);

}  // namespace minitorch::autograd
