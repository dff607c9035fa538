#pragma once
/// \file host_adamw.h
/// The host AdamW step of ZeRO-Offload: the optimizer step over a rank's shard runs on the CPU, in
/// one fused pass (DeepSpeed's CPU-Adam is the model): each element's f32 master weight, gradient,
/// m and v are read once, the new master, m and v written once, and the 16-bit copy the device
/// computes with (bf16 or f16) written in the same pass. The pass is memory-bound, so the bytes
/// are what it costs: 28 per element with f32 gradients, 30 with the 16-bit copy (bench/README.md).
///
/// The math is the lab kernel's (`ops::adamw_step`, minitorch/cpu_adamw.cpp), to the bit: for the
/// same inputs (the same n, the master at the same address modulo 64 bytes, the same thread count)
/// master, m and v come out bit-identical, so an offloaded run's losses equal the run without
/// offload. Two things make that more than "the same formula" (minitorch/host_adamw.cpp says how):
/// which products the compiler fused into an FMA in the lab kernel, and that Eigen's vectorised
/// sqrt there is an approximation (rsqrt and one Newton step), used only where Eigen vectorised.
///
/// \code
///   // master, m, v: n f32; grad: n bf16; copy: n bf16, the weights the device computes with next
///   host_adamw_step(master, grad, DType::bf16, m, v, n, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, step}, copy);
/// \endcode
#include <cstdint>

#include "minitorch/dtype.h"
#include "minitorch/ops.h"
#include "minitorch/tensor.h"

namespace minitorch {

/// One AdamW step over n elements, in place, on all threads (`num_threads()`):
///
///   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²
///   p -= lr (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd p)
///
/// Shapes (all host memory, none overlapping): `master`, `m`, `v`: n f32; `grad`: n elements of
/// `grad_dtype` (f32, bf16 or f16); `copy16`: nullptr, or n 16-bit elements of `copy_dtype`
/// (bf16 or f16) that receive the new master rounded to nearest even, as `Tensor::to` rounds
/// (NaN stays NaN, f16 overflows to ±inf). Throws std::invalid_argument on a bad dtype, n below 0,
/// a null array with n above 0, or `hp.step` below 1.
void host_adamw_step(float* master, const void* grad, DType grad_dtype, float* m, float* v, std::int64_t n,
                     const ops::AdamWParams& hp, std::uint16_t* copy16 = nullptr, DType copy_dtype = DType::bf16);

/// The same step through the portable path only: scalar code plus Eigen's own packet sqrt, what a
/// build without AVX2 (`make NATIVE=0`) runs. Same arguments, same bits; for the tests, which
/// compare it with the vector path of a native build, and for reading.
void host_adamw_step_portable(float* master, const void* grad, DType grad_dtype, float* m, float* v, std::int64_t n,
                              const ops::AdamWParams& hp, std::uint16_t* copy16 = nullptr,
                              DType copy_dtype = DType::bf16);

/// Lanes of the vector path this build compiled into `host_adamw_step`: 16 (AVX-512), 8 (AVX2 + FMA
/// + F16C) or 0 (none: it runs the portable path).
int host_adamw_vector_lanes();

/// The step on tensors: `master`, `m`, `v` contiguous f32 on the CPU, `grad` contiguous f32, bf16 or
/// f16 with the same number of elements (any shape), `copy16` null or a contiguous bf16 or f16 CPU
/// tensor of that many elements. Throws std::invalid_argument naming the tensor that does not fit.
void host_adamw_step(Tensor& master, const Tensor& grad, Tensor& m, Tensor& v, const ops::AdamWParams& hp,
                     Tensor* copy16 = nullptr);

}  // namespace minitorch
