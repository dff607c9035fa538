#pragma once
/// \file backend.h
/// The CUDA kernels behind minitorch's Backend interface (minitorch/backend.h). Every method makes
/// its inputs contiguous on the device first (a strided-gather kernel, cuda/util.cu), computes in
/// f32 and returns new contiguous tensors with the dtypes the interface states. The methods are
/// defined by family: util.cu (conversions), elementwise.cu (binary, unary, add_, scale_, GELU),
/// reduce.cu (sum, max_last, sum_squares), matmul.cu (cuBLAS + a naive kernel), softmax.cu
/// (softmax, causal softmax, cross-entropy), nn.cu (LayerNorm, embedding, AdamW).
/// All kernels run on the default stream, in order; copies to the host wait for them.
#include "minitorch/backend.h"

namespace minitorch::cuda {

class CudaBackend : public Backend {
 public:
  const char* name() const override { return "cuda"; }

  void copy_(Tensor& dst, const Tensor& src) override;
  void fill_(Tensor& t, float value) override;

  Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape) override;
  Tensor unary(UnaryOp op, const Tensor& a, float p0, float p1) override;
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
  ops::LayerNormOut layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) override;
  ops::LayerNormGrads layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                         const Tensor& mean, const Tensor& rstd) override;
  Tensor gelu(const Tensor& x) override;
  Tensor gelu_backward(const Tensor& x, const Tensor& dy) override;
  Tensor embedding(const Tensor& weight, const Tensor& idx) override;
  Tensor embedding_backward(const Tensor& dy, const Tensor& idx, std::int64_t num_embeddings) override;
  ops::CrossEntropyOut cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index) override;
  Tensor cross_entropy_backward(const Tensor& probs, const Tensor& targets, const Tensor& dloss, std::int64_t count,
                                std::int32_t ignore_index) override;

  void adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const ops::AdamWParams& hp) override;
};

/// The process-wide instance (never destroyed).
CudaBackend& cuda_backend();

// ---- helpers shared by the kernel files (cuda/util.cu) ----
/// x itself if contiguous f32, else a new contiguous f32 copy on x's device (bf16 widened, strides walked).
Tensor f32_contiguous(const Tensor& x);
/// x itself if contiguous, else a contiguous copy of the same dtype.
Tensor contiguous(const Tensor& x);
/// New contiguous f32 tensor on `device` (uninitialised).
Tensor f32_empty(const Shape& shape, Device device);
/// `t` (contiguous f32) as `dtype`: t itself for f32, else a new bf16 copy (round to nearest even).
Tensor f32_to(const Tensor& t, DType dtype);
/// Copies `src` (same shape, any view, any float dtype; or i32 into i32) into contiguous `dst`.
void copy_into(Tensor& dst, const Tensor& src);
/// dst[:] = value (contiguous dst, any dtype).
void fill(Tensor& dst, float value);
/// dst (any view on the device, same shape and dtype as packed) = packed (contiguous): a scatter through
/// dst's strides, the bytes moved as they are.
void scatter(const Tensor& packed, Tensor& dst);
/// cudaSetDevice for the tensor's device.
void use_device(const Tensor& t);
/// Checks ids (contiguous i32 on the device) against [0, V), skipping `ignore` when `has_ignore`.
/// Returns the number of ids that are not ignored; throws std::invalid_argument naming `op`, the
/// first bad id and its position, in the CPU kernels' words (`what` = "id" or "target").
std::int64_t check_ids(const char* op, const char* what, const Tensor& ids, std::int64_t V, bool has_ignore,
                       std::int32_t ignore);

}  // namespace minitorch::cuda
