// Matrix products on the CPU. The fast path maps the operands as Eigen matrices in place (row- or
// column-major, so transposed views and the trans_a / trans_b flags cost no copy) and lets Eigen's
// blocked, vectorised GEMM do the work. gemm_naive is the same product as a triple loop.
#include "minitorch/cpu_eigen.h"
#include <algorithm>
#include <cstring>

#include "minitorch/cpu_backend.h"
#include "minitorch/cpu_util.h"
#include "minitorch/parallel.h"
#ifdef _OPENMP
#include <omp.h>
#endif

namespace minitorch::cpu {

// C (M, N) = A (M, K) B (K, N): for each output element, a dot product over K.
void gemm_naive(std::int64_t M, std::int64_t N, std::int64_t K, const float* a, std::int64_t a_rs,
                std::int64_t a_cs, const float* b, std::int64_t b_rs, std::int64_t b_cs, float* c) {
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      float acc = 0.f;
      for (std::int64_t k = 0; k < K; ++k) acc += a[i * a_rs + k * a_cs] * b[k * b_rs + j * b_cs];
      c[i * N + j] = acc;
    }
}

namespace {
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMap = Eigen::Map<const RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;
using ColMap = Eigen::Map<const Eigen::MatrixXf, Eigen::Unaligned, Eigen::OuterStride<>>;
using OutMap = Eigen::Map<RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;

// One Eigen product C (M, N; leading dim ldc) = A B. Eigen runs it on Eigen::nbThreads() threads,
// or on one when called inside a parallel region.
void eigen_product(std::int64_t M, std::int64_t N, std::int64_t K, const float* a, std::int64_t a_rs,
                   std::int64_t a_cs, const float* b, std::int64_t b_rs, std::int64_t b_cs, float* c,
                   std::int64_t ldc) {
  OutMap C(c, M, N, Eigen::OuterStride<>(ldc));
  const bool a_row = a_cs == 1, b_row = b_cs == 1;
  if (a_row && b_row)
    C.noalias() = RowMap(a, M, K, Eigen::OuterStride<>(a_rs)) * RowMap(b, K, N, Eigen::OuterStride<>(b_rs));
  else if (a_row)
    C.noalias() = RowMap(a, M, K, Eigen::OuterStride<>(a_rs)) * ColMap(b, K, N, Eigen::OuterStride<>(b_cs));
  else if (b_row)
    C.noalias() = ColMap(a, M, K, Eigen::OuterStride<>(a_cs)) * RowMap(b, K, N, Eigen::OuterStride<>(b_rs));
  else
    C.noalias() = ColMap(a, M, K, Eigen::OuterStride<>(a_cs)) * ColMap(b, K, N, Eigen::OuterStride<>(b_cs));
}

bool in_parallel_region() {
#ifdef _OPENMP
  return omp_in_parallel();
#else
  return false;
#endif
}

// Splits [0, n) into `parts` slices whose boundaries are multiples of 16 (one AVX-512 vector).
std::int64_t slice_bound(std::int64_t n, int part, int parts) {
  if (part >= parts) return n;
  return std::min(n, (n * part / parts) / 16 * 16);
}
}  // namespace

void gemm(std::int64_t M, std::int64_t N, std::int64_t K, const float* a, std::int64_t a_rs, std::int64_t a_cs,
          const float* b, std::int64_t b_rs, std::int64_t b_cs, float* c, GemmSplit split) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    std::memset(c, 0, static_cast<std::size_t>(M * N) * sizeof(float));
    return;
  }
  const int threads = in_parallel_region() ? 1 : num_threads();
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (threads <= 1 || work < 4e6) {
    // One thread, or a small product: Eigen decides. Eigen::nbThreads() follows num_threads()
    // (parallel.cpp), and Eigen never starts threads inside a parallel region (batched matmul).
    eigen_product(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, N);
    return;
  }
  if (split == GemmSplit::automatic) {
    // Independent slices (each thread packs its own panels; no synchronisation) of C's larger
    // dimension. Eigen's own split shares the packed panels between threads and waits for the
    // slowest at every block: as fast on a quiet machine, several times slower when the cores are
    // shared (bench-matmul --splits), and for the LM head (N = 50257) half as fast even when quiet.
    split = N >= M ? GemmSplit::cols : GemmSplit::rows;
  }
  if (split == GemmSplit::eigen) {
    eigen_product(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, N);
    return;
  }
  const bool by_cols = split == GemmSplit::cols;
  const int parts = static_cast<int>(std::min<std::int64_t>(threads, (by_cols ? N : M) / 16));
  if (parts <= 1) {
    eigen_product(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, N);
    return;
  }
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int p = 0; p < parts; ++p) {
    if (by_cols) {
      std::int64_t n0 = slice_bound(N, p, parts), n1 = slice_bound(N, p + 1, parts);
      if (n1 > n0) eigen_product(M, n1 - n0, K, a, a_rs, a_cs, b + n0 * b_cs, b_rs, b_cs, c + n0, N);
    } else {
      std::int64_t m0 = slice_bound(M, p, parts), m1 = slice_bound(M, p + 1, parts);
      if (m1 > m0) eigen_product(m1 - m0, N, K, a + m0 * a_rs, a_rs, a_cs, b, b_rs, b_cs, c + m0 * N, N);
    }
  }
}

namespace {
/// How a stored matrix (R, C) with strides (sr, sc) can be read in place: as row-major (sc == 1) or
/// column-major (sr == 1) with a leading dimension that does not overlap rows / columns.
bool mappable(std::int64_t R, std::int64_t C, std::int64_t& sr, std::int64_t& sc) {
  if (C == 1) sc = 1;
  if (R == 1 && sc != 1) sr = 1;
  if (sc == 1 && sr >= std::max<std::int64_t>(C, 1)) return true;
  if (sr == 1 && sc >= std::max<std::int64_t>(R, 1)) return true;
  return false;
}

/// An operand ready for gemm: f32 data, in-place strides of its last two (stored) dims, batch strides.
struct Operand {
  Tensor t;        // f32, either the input itself or a contiguous copy
  std::int64_t sr = 0, sc = 0;
};
Operand prepare(const Tensor& x) {
  Operand op{x.dtype() == DType::f32 ? x : f32_contiguous(x)};
  const std::int64_t nd = op.t.dim();
  std::int64_t R = op.t.shape()[nd - 2], C = op.t.shape()[nd - 1];
  op.sr = op.t.strides()[nd - 2];
  op.sc = op.t.strides()[nd - 1];
  if (!mappable(R, C, op.sr, op.sc)) {
    op.t = f32_contiguous(op.t);
    op.sr = C;
    op.sc = 1;
  }
  return op;
}

/// True if the rows of every batch of A continue one another: row r of batch i sits at (i M + r) * sr,
/// so the batch folds into the rows of one product (needs row-major storage, sc == 1).
bool rows_fold(const Operand& A, std::int64_t M) {
  if (A.sc != 1) return false;
  std::int64_t expect = M * A.sr;
  for (std::int64_t d = A.t.dim() - 3; d >= 0; --d) {
    if (A.t.shape()[d] != 1 && A.t.strides()[d] != expect) return false;
    expect *= A.t.shape()[d];
  }
  return true;
}

/// Element offset of batch `i` (row-major over the first nd-2 dims) in t.
std::int64_t batch_offset(const Tensor& t, std::int64_t i) {
  std::int64_t off = 0;
  for (std::int64_t d = t.dim() - 3; d >= 0; --d) {
    const std::int64_t n = t.shape()[d];
    off += (i % n) * t.strides()[d];
    i /= n;
  }
  return off;
}
}  // namespace

// a: (..., M, K) (or (..., K, M) if trans_a);  b: (..., K, N), (K, N) shared, or transposed;  out: (..., M, N)
Tensor CpuBackend::matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  Operand A = prepare(a), B = prepare(b);
  const std::int64_t nd = a.dim();
  const std::int64_t M = trans_a ? a.shape()[nd - 1] : a.shape()[nd - 2];
  const std::int64_t K = trans_a ? a.shape()[nd - 2] : a.shape()[nd - 1];
  const std::int64_t N = trans_b ? b.shape()[b.dim() - 2] : b.shape()[b.dim() - 1];
  // Logical element (i, k) of op(A) is stored at (k, i) when transposed: swap the strides.
  const std::int64_t a_rs = trans_a ? A.sc : A.sr, a_cs = trans_a ? A.sr : A.sc;
  const std::int64_t b_rs = trans_b ? B.sc : B.sr, b_cs = trans_b ? B.sr : B.sc;

  Shape out_shape(a.shape().begin(), a.shape().end() - 2);
  out_shape.push_back(M);
  out_shape.push_back(N);
  Tensor out = f32_empty(out_shape, a.device());
  std::int64_t batches = shape_numel(Shape(a.shape().begin(), a.shape().end() - 2));
  const bool shared_b = b.dim() == 2;
  if (shared_b && batches > 1 && !trans_a && rows_fold(A, M)) {
    // (..., M, K) @ (K, N) with rows evenly spaced across the batch: one (batches * M, K) product,
    // which runs faster than `batches` small ones.
    gemm(batches * M, N, K, cfp(A.t), a_rs, a_cs, cfp(B.t), b_rs, b_cs, fp(out));
    return f32_to(out, a.dtype());
  }
  const float *pa = cfp(A.t), *pb = cfp(B.t);
  float* pc = fp(out);
  auto one = [&](std::int64_t i) {
    gemm(M, N, K, pa + batch_offset(A.t, i), a_rs, a_cs, pb + (shared_b ? 0 : batch_offset(B.t, i)), b_rs, b_cs,
         pc + i * M * N);
  };
  if (batches >= num_threads()) {  // many small products (attention): one thread each
    parallel_for(batches, 1, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) one(i);
    });
  } else {  // few large products: each one uses all threads
    for (std::int64_t i = 0; i < batches; ++i) one(i);
  }
  return f32_to(out, a.dtype());
}

}  // namespace minitorch::cpu
