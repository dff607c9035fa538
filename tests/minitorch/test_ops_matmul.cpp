// matmul against the textbook triple loop: every transpose combination, batches, shared 2-D b,
// strided views, bf16, uneven and threaded sizes, and the bad-shape messages.
#include "minitorch/cpu_backend.h"
#include "test_ops_util.h"

using namespace ops_test;

namespace {
// op(A)[i, k] for a row-major stored matrix of `rows` x `cols` (transposed if t).
float elem(const std::vector<float>& m, std::int64_t base, std::int64_t rows, std::int64_t cols, bool t, std::int64_t i,
           std::int64_t k) {
  (void)rows;
  return t ? m[base + k * cols + i] : m[base + i * cols + k];
}

// Reference batched matmul in double: a (batch, ra, ca), b (bb, rb, cb) with bb == batch or 1.
std::vector<float> ref_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  auto av = a.contiguous().to_vector(), bv = b.contiguous().to_vector();
  const std::int64_t ra = a.size(-2), ca = a.size(-1), rb = b.size(-2), cb = b.size(-1);
  const std::int64_t M = ta ? ca : ra, K = ta ? ra : ca, N = tb ? rb : cb;
  const std::int64_t batch = a.numel() / (ra * ca);
  const bool shared = b.dim() == 2;
  std::vector<float> out(static_cast<std::size_t>(batch * M * N));
  for (std::int64_t p = 0; p < batch; ++p)
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (std::int64_t k = 0; k < K; ++k)
          acc += static_cast<double>(elem(av, p * ra * ca, ra, ca, ta, i, k)) *
                 elem(bv, shared ? 0 : p * rb * cb, rb, cb, tb, k, j);
        out[p * M * N + i * N + j] = static_cast<float>(acc);
      }
  return out;
}

Shape stored(Shape batch, std::int64_t r, std::int64_t c, bool t) {
  batch.push_back(t ? c : r);
  batch.push_back(t ? r : c);
  return batch;
}
}  // namespace

TEST(L01_OpsMatmul, TransposedVariantsMatchNaive) {
  Generator g(21);
  for (auto [M, K, N] : {std::tuple{1, 1, 1}, {3, 5, 7}, {37, 53, 29}, {64, 17, 128}, {16, 100, 1}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = randn(stored({}, M, K, ta), g), b = randn(stored({}, K, N, tb), g);
        Tensor c = ops::matmul(a, b, ta, tb);
        EXPECT_EQ(c.shape(), (Shape{M, N}));
        EXPECT_TRUE(all_close(c, ref_matmul(a, b, ta, tb), 1e-4f, 1e-4f)) << M << "x" << K << "x" << N << " ta=" << ta << " tb=" << tb;
      }
  }
}

TEST(L01_OpsMatmul, NaiveKernelIsTheReferenceToo) {
  // gemm_naive (kept beside the fast kernel for teaching) agrees with the Eigen path.
  Generator g(22);
  const std::int64_t M = 19, K = 23, N = 31;
  Tensor a = randn({M, K}, g), b = randn({N, K}, g);
  Tensor c = ops::matmul(a, b, false, true);
  std::vector<float> ref(M * N);
  minitorch::cpu::gemm_naive(M, N, K, a.data<float>(), K, 1, b.data<float>(), 1, K, ref.data());
  EXPECT_TRUE(all_close(c, ref, 1e-5f, 1e-5f));
}

TEST(L01_OpsMatmul, BatchedAndSharedB) {
  Generator g(23);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = randn(stored({2, 3}, 9, 8, ta), g);
      Tensor b = randn(stored({2, 3}, 8, 10, tb), g);
      Tensor c = ops::matmul(a, b, ta, tb);
      EXPECT_EQ(c.shape(), (Shape{2, 3, 9, 10}));
      EXPECT_TRUE(all_close(c, ref_matmul(a, b, ta, tb), 1e-4f, 1e-4f));
      Tensor w = randn(stored({}, 8, 10, tb), g);  // a Linear weight shared by every batch
      Tensor cs = ops::matmul(a, w, ta, tb);
      EXPECT_EQ(cs.shape(), (Shape{2, 3, 9, 10}));
      EXPECT_TRUE(all_close(cs, ref_matmul(a, w, ta, tb), 1e-4f, 1e-4f));
    }
}

TEST(L01_OpsMatmul, StridedViewsAndBf16) {
  Generator g(24);
  // attention-style views: q (B, T, H, hs) -> (B, H, T, hs) by transpose, no copy
  Tensor q = randn({2, 6, 3, 4}, g), k = randn({2, 6, 3, 4}, g);
  Tensor qh = q.transpose(1, 2), kh = k.transpose(1, 2);  // (2, 3, 6, 4), non-contiguous
  Tensor att = ops::matmul(qh, kh, false, true);
  EXPECT_EQ(att.shape(), (Shape{2, 3, 6, 6}));
  EXPECT_TRUE(all_close(att, ref_matmul(qh, kh, false, true), 1e-5f, 1e-5f));
  Tensor w = randn({5, 4}, g);  // shared b with a batch that does not fold into rows
  EXPECT_TRUE(all_close(ops::matmul(qh, w, false, true), ref_matmul(qh, w, false, true), 1e-5f, 1e-5f));
  EXPECT_TRUE(all_close(ops::matmul(q, w, false, true), ref_matmul(q, w, false, true), 1e-5f, 1e-5f));  // folds
  // a transposed view passed with trans_a (double transpose) and a narrowed b
  Tensor a = randn({12, 7}, g), big = randn({12, 20}, g);
  Tensor bn = big.narrow(1, 3, 9);  // (12, 9) with row stride 20
  EXPECT_TRUE(all_close(ops::matmul(a.transpose(0, 1), bn), ref_matmul(a.transpose(0, 1), bn, false, false), 1e-5f, 1e-5f));
  EXPECT_TRUE(all_close(ops::matmul(a, bn, true, false), ref_matmul(a, bn, true, false), 1e-5f, 1e-5f));
  // an expanded (stride-0) operand
  Tensor row = randn({1, 7}, g);
  Tensor ex = row.expand({5, 7});
  EXPECT_TRUE(all_close(ops::matmul(ex, a, false, true), ref_matmul(ex.contiguous(), a, false, true), 1e-5f, 1e-5f));
  // bf16: inputs widened exactly, f32 accumulation, one rounding of the result
  Tensor ah = randn({33, 65}, g, DType::bf16), bh = randn({65, 17}, g, DType::bf16);
  Tensor ch = ops::matmul(ah, bh);
  EXPECT_EQ(ch.dtype(), DType::bf16);
  EXPECT_TRUE(all_close(ch, ref_matmul(ah, bh, false, false), 1e-2f, 8e-3f));
  Tensor cf = ops::matmul(ah.to(DType::f32), bh);  // mixed: result takes a's dtype
  EXPECT_EQ(cf.dtype(), DType::f32);
  EXPECT_TRUE(all_close(cf, ref_matmul(ah, bh, false, false), 1e-4f, 1e-4f));
}

TEST(L01_OpsMatmul, ThreadedLargeProductsMatchOneThread) {
  // Big enough for the threaded paths (Eigen's own split and the column / row slices).
  Generator g(25);
  const std::int64_t M = 96, K = 200, N = 1100;
  Tensor a = randn({M, K}, g), b = randn({N, K}, g);
  auto ref = ref_matmul(a, b, false, true);
  Threads two(2);
  EXPECT_TRUE(all_close(ops::matmul(a, b, false, true), ref, 1e-4f, 1e-4f));
  namespace cpu = minitorch::cpu;
  for (auto split : {cpu::GemmSplit::eigen, cpu::GemmSplit::cols, cpu::GemmSplit::rows}) {
    std::vector<float> c(M * N, -1.f);
    cpu::gemm(M, N, K, a.data<float>(), K, 1, b.data<float>(), 1, K, c.data(), split);
    EXPECT_TRUE(all_close(c, ref, 1e-4f, 1e-4f)) << "split " << static_cast<int>(split);
  }
  Tensor ab = randn({5, 40, 64}, g), bb = randn({5, 64, 40}, g);  // batched: one product per thread
  EXPECT_TRUE(all_close(ops::matmul(ab, bb), ref_matmul(ab, bb, false, false), 1e-4f, 1e-4f));
}

TEST(L01_OpsMatmul, EmptyInnerDimensionGivesZeros) {
  Tensor a = Tensor::zeros({3, 0}), b = Tensor::zeros({0, 4});
  Tensor c = ops::matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{3, 4}));
  EXPECT_TRUE(all_close(c, std::vector<float>(12, 0.f), 0, 0));
}

TEST(L01_OpsMatmul, BadShapesNameBothOperands) {
  Generator g(26);
  Tensor a = randn({2, 3}, g), b = randn({4, 5}, g);
  EXPECT_INVALID_ARG(ops::matmul(a, b), "matmul: inner dimensions differ: a (2, 3) @ b (4, 5)");
  EXPECT_INVALID_ARG(ops::matmul(a, b, true, false), "matmul", "a (2, 3)^T", "b (4, 5)");
  EXPECT_INVALID_ARG(ops::matmul(randn({2, 2, 3}, g), randn({3, 3, 4}, g)), "matmul", "batch", "(2, 2, 3)", "(3, 3, 4)");
  EXPECT_INVALID_ARG(ops::matmul(randn({3}, g), randn({3, 4}, g)), "matmul", "(3)");
  EXPECT_INVALID_ARG(ops::matmul(a, Tensor::from_ints({1, 2, 3}, {3, 1})), "matmul", "i32");
}
