// Matmul on the GPU: cuBLAS (cublasGemmStridedBatchedEx, f32 or bf16 inputs, f32 accumulation; TF32
// tensor cores for a bf16 x f32 product) and
// a naive one-thread-per-output kernel to read first (cuda::set_naive_kernels(true) selects it).
//
// Row-major vs column-major: cuBLAS thinks in columns. A row-major (M, N) buffer read as
// column-major is the (N, M) matrix C^T, and C = op(A) op(B) <=> C^T = op(B)^T op(A)^T, so we ask
// cuBLAS for C^T with the operands swapped: m = N, n = M, first operand B, second A. A row-major
// (K, N) B read column-major is already B^T (no transpose flag); a transposed one needs OP_T.
#include <climits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "cuda/common.cuh"
#include "cuda/cuda.h"

namespace minitorch::cuda {

namespace {
// One cuBLAS handle per device, created on first use and kept (creating one costs milliseconds).
cublasHandle_t handle_for(int device) {
  static std::mutex mu;
  static auto* handles = new std::map<int, cublasHandle_t>();  // leaked: lives as long as the process
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles->find(device);
  if (it != handles->end()) return it->second;
  cublasHandle_t h = nullptr;
  MT_CUBLAS_CHECK(cublasCreate(&h));
  // Plain f32 math (no TF32) so results match the CPU within the f32 tolerances of the tests.
  MT_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  (*handles)[device] = h;
  return h;
}

// naive: C[p, i, j] = sum_k op(A)[p, i, k] op(B)[p, k, j], one thread per C element.
// a: (P, M, K) or (P, K, M) if ta; b: (P or 1, K, N) or (.., N, K) if tb; all contiguous f32.
__global__ void matmul_naive_kernel(const float* a, const float* b, float* c, std::int64_t P, std::int64_t M,
                                    std::int64_t N, std::int64_t K, bool ta, bool tb, bool shared_b) {
  for (std::int64_t t = gtid(); t < P * M * N; t += gstride()) {
    const std::int64_t p = t / (M * N), i = (t / N) % M, j = t % N;
    const float* ap = a + p * M * K;
    const float* bq = b + (shared_b ? 0 : p * K * N);
    float acc = 0.f;
    for (std::int64_t k = 0; k < K; ++k) {
      const float av = ta ? ap[k * M + i] : ap[i * K + k];
      const float bv = tb ? bq[j * K + k] : bq[k * N + j];
      acc += av * bv;
    }
    c[t] = acc;
  }
}

int as_int(std::int64_t v, const char* what) {
  if (v > INT_MAX) throw std::invalid_argument(std::string("cuda matmul: ") + what + " too large for cuBLAS");
  return static_cast<int>(v);
}
}  // namespace

// a: (..., M, K) or (..., K, M) if trans_a; b: (..., K, N) / (K, N) or transposed -> (..., M, N), dtype of a
Tensor CudaBackend::matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  use_device(a);
  const std::int64_t nd = a.dim();
  const std::int64_t M = trans_a ? a.shape()[nd - 1] : a.shape()[nd - 2];
  const std::int64_t K = trans_a ? a.shape()[nd - 2] : a.shape()[nd - 1];
  const std::int64_t N = trans_b ? b.shape()[b.dim() - 2] : b.shape()[b.dim() - 1];
  Shape out_shape(a.shape().begin(), a.shape().end() - 2);
  const std::int64_t P = shape_numel(out_shape);
  out_shape.push_back(M);
  out_shape.push_back(N);
  const bool shared_b = b.dim() == 2;
  const bool bf16 = a.dtype() == DType::bf16 && b.dtype() == DType::bf16 && !naive_kernels();
  // bf16 x bf16 -> bf16 straight from cuBLAS (f32 accumulate, one rounding at the end: what the CPU
  // does); any other mix computes in f32 and converts the result to a's dtype.
  Tensor A = bf16 ? contiguous(a) : f32_contiguous(a);
  Tensor B = bf16 ? contiguous(b) : f32_contiguous(b);
  Tensor out = Tensor::empty(out_shape, bf16 ? DType::bf16 : DType::f32, a.device());
  if (out.numel() == 0) return f32_to(out, a.dtype());
  if (K == 0) {
    fill(out, 0.f);
    return bf16 ? out : f32_to(out, a.dtype());
  }
  if (naive_kernels()) {
    matmul_naive_kernel<<<grid_for(P * M * N), kThreads>>>(cfp(A), cfp(B), fp(out), P, M, N, K, trans_a, trans_b,
                                                           shared_b);
    MT_CUDA_CHECK_LAUNCH();
    return f32_to(out, a.dtype());
  }
  const cudaDataType_t type = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  // One operand bf16, the other f32 (in a 16-bit model's backward the gradients flowing back are f32,
  // the weights bf16; docs/design.md): cuBLAS takes one input type, so both go in as f32, and the tensor
  // cores multiply them in TF32 — the bf16 operand exactly (7 mantissa bits fit in TF32's 10), the f32
  // one to 10 bits, finer than the bf16 rounding it meets anyway, accumulated in f32. f32 x f32 stays
  // plain f32 math (no TF32): the f32 model's results match the CPU's.
  const bool mixed = (a.dtype() == DType::bf16) != (b.dtype() == DType::bf16);
  const cublasComputeType_t compute = mixed ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha = 1.f, beta = 0.f;
  const int m = as_int(N, "N"), n = as_int(M, "M"), k = as_int(K, "K");
  // Leading dims of the buffers as cuBLAS sees them (column-major): the row length of each buffer.
  const int ldb = trans_b ? k : m;   // B stored (K, N) -> ld N; stored (N, K) -> ld K
  const int lda = trans_a ? n : k;   // A stored (M, K) -> ld K; stored (K, M) -> ld M
  MT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle_for(a.device().index), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
      &alpha, B.raw_data(), type, ldb, shared_b ? 0 : K * N, A.raw_data(), type, lda, M * K, &beta, out.raw_data(),
      type, m, M * N, as_int(P, "batch count"), compute, CUBLAS_GEMM_DEFAULT));
  return bf16 ? out : f32_to(out, a.dtype());
}

}  // namespace minitorch::cuda
