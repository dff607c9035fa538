#pragma once
/// \file cpu_backend.h
/// The built-in CPU kernels: Eigen for matmul, OpenMP (minitorch::parallel_for) for elementwise and
/// row-wise kernels. The methods are defined by family in cpu_elementwise.cpp, cpu_reduce.cpp,
/// cpu_matmul.cpp, cpu_softmax.cpp, cpu_nn.cpp and cpu_adamw.cpp.
#include "minitorch/backend.h"

namespace minitorch::cpu {

class CpuBackend : public Backend {
 public:
  const char* name() const override { return "cpu"; }

  // Every kernel of minitorch/backend_ops.def.
#define MINITORCH_BACKEND_OP(result, name, parameters, arguments) result name parameters override;
#include "minitorch/backend_ops.def"
};

/// How one large product is shared among the threads: Eigen's own parallel GEMM, or one
/// single-threaded product per slice of C's columns / rows. `automatic` picks by shape.
enum class GemmSplit : std::uint8_t { automatic, eigen, cols, rows };
/// C = A B for plain f32 matrices (the core of matmul, exposed for the benchmark and tests).
/// A is (M, K): element (i, k) at a[i * a_rs + k * a_cs] with a_rs == 1 or a_cs == 1 (row- or
/// column-major, any leading dimension); likewise B (K, N). C is row-major (M, N), leading dim N.
/// Uses num_threads() threads (one inside a parallel region).
void gemm(std::int64_t M, std::int64_t N, std::int64_t K, const float* a, std::int64_t a_rs, std::int64_t a_cs,
          const float* b, std::int64_t b_rs, std::int64_t b_cs, float* c, GemmSplit split = GemmSplit::automatic);
/// The textbook triple loop, for teaching and as the test reference.  C (M, N) = A (M, K) B (K, N)
void gemm_naive(std::int64_t M, std::int64_t N, std::int64_t K, const float* a, std::int64_t a_rs,
                std::int64_t a_cs, const float* b, std::int64_t b_rs, std::int64_t b_cs, float* c);

}  // namespace minitorch::cpu
