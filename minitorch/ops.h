#pragma once
/// \file ops.h
/// The raw (non-differentiable) tensor ops, forward and backward kernels. Each function checks its
/// arguments once (shapes, dtypes, devices: one clear std::invalid_argument naming the op and the
/// shapes) and then dispatches to the kernels of the inputs' device (minitorch/backend.h).
/// All results are new contiguous tensors. Inputs may be any view (strided, bf16); bf16 inputs are
/// widened to f32 to compute and elementwise / matmul results keep the dtype of the first input.
///
/// Differentiable versions, which record the graph, are in autograd/functions.h.
#include <cstdint>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch::ops {

// ---------------- elementwise, NumPy broadcasting ----------------
/// out = a + b, a - b, a * b, a / b with broadcasting: shapes are aligned from the right and
/// sizes must be equal or 1.   a: (..., N), b: broadcastable to a (or vice versa)
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
/// out = a * s + t
Tensor affine(const Tensor& a, float s, float t = 0.f);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor pow(const Tensor& a, float exponent);
/// Result shape of broadcasting a with b; throws naming both shapes if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
/// Sums `g` down to `shape` (undoes a broadcast): the backward of broadcasting.
Tensor sum_to(const Tensor& g, const Shape& shape);

// ---------------- in place (for accumulation and optimizers; dst must be contiguous) -------
/// dst += alpha * src   (same shape; src may be any view / dtype)
void add_(Tensor& dst, const Tensor& src, float alpha = 1.f);
/// dst *= s
void scale_(Tensor& dst, float s);

// ---------------- reductions ----------------
/// Sum over `dims` (negative counts from the end; empty = all dims).   keepdim keeps size-1 dims.
Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
/// Largest element over the last dimension.  x: (..., N) -> (...)
Tensor max_last(const Tensor& x);
/// Sum of squares of all elements, accumulated in double (for global-norm clipping).
double sum_squares(const Tensor& x);

// ---------------- matmul ----------------
/// Batched matrix product with optional transposes of the last two dims.
///   a: (..., M, K) (or (..., K, M) if trans_a),  b: (..., K, N) or (K, N) (or transposed),
///   out: (..., M, N).  The batch dims of b must equal a's, or b is 2-D and shared by all batches.
/// Accumulates in f32.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// ---------------- neural-net kernels ----------------
/// Softmax over the last dim.   x: (..., N) -> (..., N)
Tensor softmax(const Tensor& x);
/// dx = y * (dy - sum(dy * y))   y: softmax output (..., N), dy: (..., N)
Tensor softmax_backward(const Tensor& y, const Tensor& dy);
/// Causal softmax of scaled scores: y[.., i, j] = softmax_j(scale * x[.., i, j]) over j <= i,
/// and exactly 0 for j > i.   x: (..., T, T) -> (..., T, T)
Tensor causal_softmax(const Tensor& x, float scale);
/// dx = scale * y * (dy - sum_j(dy * y))   (zero above the diagonal)
Tensor causal_softmax_backward(const Tensor& y, const Tensor& dy, float scale);

/// LayerNorm over the last dim.   x: (..., C), weight, bias: (C)
/// Returns {y (..., C), mean (...), rstd (...)}; mean and rstd are f32 and saved for backward.
struct LayerNormOut {
  Tensor y, mean, rstd;
};
LayerNormOut layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);
/// Returns {dx (..., C), dweight (C), dbias (C)}.
struct LayerNormGrads {
  Tensor dx, dweight, dbias;
};
LayerNormGrads layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                  const Tensor& mean, const Tensor& rstd);

/// tanh-GELU: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   x: any shape
Tensor gelu(const Tensor& x);
Tensor gelu_backward(const Tensor& x, const Tensor& dy);

/// Row gather.   weight: (V, C), idx: (...) i32 in [0, V) -> (..., C). Out-of-range ids throw.
Tensor embedding(const Tensor& weight, const Tensor& idx);
/// Scatter-add of rows.   dy: (..., C), idx: (...) -> dweight (V, C)
Tensor embedding_backward(const Tensor& dy, const Tensor& idx, std::int64_t num_embeddings);

/// Mean cross-entropy of logits against integer targets; targets equal to `ignore_index` do not
/// count.   logits: (N, V), targets: (N) i32 -> {loss (scalar f32), probs (N, V) f32 softmax}.
struct CrossEntropyOut {
  Tensor loss, probs;
  std::int64_t count = 0;  // number of targets that counted
};
CrossEntropyOut cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index = -1);
/// dlogits = dloss * (probs - onehot(targets)) / count   (rows with ignored targets are 0)
Tensor cross_entropy_backward(const Tensor& probs, const Tensor& targets, const Tensor& dloss,
                              std::int64_t count, std::int32_t ignore_index = -1);

// ---------------- optimizer kernel ----------------
/// One AdamW update of a parameter, in place, in f32 (param may be f32; m, v f32; grad any dtype):
///   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²
///   p -= lr * (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd * p)
struct AdamWParams {
  float lr, beta1, beta2, eps, weight_decay;
  std::int64_t step;  // t, from 1
};
void adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamWParams& hp);

}  // namespace minitorch::ops
