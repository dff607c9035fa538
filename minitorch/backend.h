#pragma once
/// \file backend.h
/// The kernels of one device type, behind a virtual interface. `ops::*` (minitorch/ops.h) checks its
/// arguments once and then calls `backend(device).kernel(...)`, so a kernel may assume valid input:
/// shapes agree, dtypes are the ones ops.h allows, every tensor is on this backend's device.
///
/// The CPU kernels (minitorch/cpu_*.cpp) are built in. The CUDA layer implements the same interface
/// and installs it once at start-up with `register_backend(DeviceType::cuda, &its_backend)`.
///
/// Common rules for every kernel:
///   - inputs may be any view (strided, transposed, expanded with stride 0) and f32 or bf16;
///     kernels compute in f32 and return new contiguous tensors;
///   - float results take the dtype of the first tensor argument, except that backward kernels
///     return gradients in dy's dtype (and the methods below say where else);
///   - i32 tensors are only indices / targets.
#include <cstdint>
#include <vector>

#include "minitorch/device.h"
#include "minitorch/ops.h"
#include "minitorch/tensor.h"

namespace minitorch {

/// Binary elementwise ops (NumPy broadcasting).
enum class BinaryOp : std::uint8_t { add, sub, mul, div };
/// Unary elementwise ops; the scalars p0, p1 are: affine (s, t), pow (exponent, -), others unused.
enum class UnaryOp : std::uint8_t { affine, neg, exp, log, tanh, sqrt, pow };

class Backend {
 public:
  virtual ~Backend() = default;
  /// "cpu", "cuda".
  virtual const char* name() const = 0;

  // ---- copies (Tensor::copy_, fill_, clone, to(DType) land here) ----
  /// dst = src elementwise: same shape, both on this device; src any view and dtype (i32 only into i32).
  virtual void copy_(Tensor& dst, const Tensor& src) = 0;
  /// Every element of t = value.
  virtual void fill_(Tensor& t, float value) = 0;

  // ---- elementwise ----
  /// out (out_shape) = a op b, where a and b broadcast to out_shape (aligned from the right).
  virtual Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape) = 0;
  /// out = f(a; p0, p1), same shape and dtype as a.
  virtual Tensor unary(UnaryOp op, const Tensor& a, float p0, float p1) = 0;
  /// dst += alpha * src. dst contiguous (f32 or bf16), src same shape, any view / dtype.
  virtual void add_(Tensor& dst, const Tensor& src, float alpha) = 0;
  /// dst *= s. dst contiguous (f32 or bf16).
  virtual void scale_(Tensor& dst, float s) = 0;

  // ---- reductions ----
  /// Sum over `dims` (sorted, unique, non-negative; empty = a plain copy); keepdim keeps size-1 dims.
  virtual Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) = 0;
  /// x: (..., N), N >= 1 -> (...)
  virtual Tensor max_last(const Tensor& x) = 0;
  /// Sum of x² over all elements, accumulated in double.
  virtual double sum_squares(const Tensor& x) = 0;

  // ---- matmul ----
  /// a: (..., M, K) or (..., K, M) if trans_a; b: (..., K, N) / (K, N) or transposed;
  /// out: (..., M, N), dtype of a. Shapes already checked.
  virtual Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) = 0;

  // ---- neural-net kernels (shapes as in ops.h) ----
  virtual Tensor softmax(const Tensor& x) = 0;
  /// dx: dtype of dy (as for every backward).
  virtual Tensor softmax_backward(const Tensor& y, const Tensor& dy) = 0;
  virtual Tensor causal_softmax(const Tensor& x, float scale) = 0;
  virtual Tensor causal_softmax_backward(const Tensor& y, const Tensor& dy, float scale) = 0;
  virtual ops::LayerNormOut layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) = 0;
  /// dx: dtype of dy; dweight, dbias: dtype of weight.
  virtual ops::LayerNormGrads layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                 const Tensor& mean, const Tensor& rstd) = 0;
  virtual Tensor gelu(const Tensor& x) = 0;
  /// dx: dtype of dy.
  virtual Tensor gelu_backward(const Tensor& x, const Tensor& dy) = 0;
  /// Throws std::invalid_argument for an id outside [0, V) (ids live on the device, so the kernel checks).
  virtual Tensor embedding(const Tensor& weight, const Tensor& idx) = 0;
  /// dweight (V, C) in dy's dtype; throws for an id outside [0, V).
  virtual Tensor embedding_backward(const Tensor& dy, const Tensor& idx, std::int64_t num_embeddings) = 0;
  /// Throws std::invalid_argument for a target outside [0, V) that is not ignore_index.
  virtual ops::CrossEntropyOut cross_entropy(const Tensor& logits, const Tensor& targets,
                                             std::int32_t ignore_index) = 0;
  /// dlogits f32 (N, V).
  virtual Tensor cross_entropy_backward(const Tensor& probs, const Tensor& targets, const Tensor& dloss,
                                        std::int64_t count, std::int32_t ignore_index) = 0;

  // ---- optimizer ----
  /// One fused AdamW pass; param (f32 or bf16), m, v (f32) contiguous; grad any view / dtype.
  virtual void adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const ops::AdamWParams& hp) = 0;
};

/// Installs the kernels for a device type (the CUDA layer calls this once at start-up). The CPU
/// kernels are built in; registering another CPU backend replaces them (e.g. for a test double).
/// `kernels` must outlive every later op; nullptr unregisters.
void register_backend(DeviceType type, Backend* kernels);
/// The kernels for a device; throws std::runtime_error if this build has none for it
/// ("no kernels for cuda:0 in this build (built without CUDA)").
Backend& backend(Device device);
/// The built-in CPU kernels (a function-local static object).
Backend& cpu_backend();

}  // namespace minitorch
