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
