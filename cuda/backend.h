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

  // Every kernel of minitorch/backend_ops.def.
#define MINITORCH_BACKEND_OP(result, name, parameters, arguments) result name parameters override;
#include "minitorch/backend_ops.def"
};

/// The process-wide instance (never destroyed).
CudaBackend& cuda_backend();

// ---- helpers shared by the kernel files (cuda/util.cu) ----
/// x itself if contiguous f32, else a new contiguous f32 copy on x's device (bf16 widened, strides walked).
Tensor f32_contiguous(const Tensor& x);
/// x itself if contiguous f32 or bf16 (kernels templated on the element type read either as it is:
/// no widened copy), else a new contiguous f32 copy.
Tensor readable(const Tensor& x);
/// x itself if contiguous, else a contiguous copy of the same dtype.
Tensor contiguous(const Tensor& x);
/// New contiguous f32 tensor on `device` (uninitialised).
Tensor f32_empty(const Shape& shape, Device device);
/// `t` (contiguous f32, or already `dtype`) as `dtype`: t itself when the dtypes agree, else a new bf16 copy
/// (round to nearest even).
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
