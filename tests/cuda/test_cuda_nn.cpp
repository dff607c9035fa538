// L04: softmax family, cross-entropy, LayerNorm, embedding and AdamW on the GPU against the CPU.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "minitorch/ops.h"
#include "minitorch/random.h"
#include "test_util.h"

namespace {
using namespace minitorch;
using namespace mt_cuda_test;

class L04_CudaSoftmax : public CudaTest {};
class L04_CudaCrossEntropy : public CudaTest {};
class L04_CudaLayerNorm : public CudaTest {};
class L04_CudaEmbedding : public CudaTest {};
class L04_CudaAdamW : public CudaTest {};

TEST_F(L04_CudaSoftmax, ForwardAndBackwardMatchCpu) {
  Generator gen(11);
  for_each_variant([&](const char* variant) {
    for (std::int64_t N : {1, 7, 32, 100, 1000})
      for (DType dt : {DType::f32, DType::bf16}) {
        Tensor x = Tensor::randn({3, 5, N}, gen, 0.f, 3.f, dt), dy = Tensor::randn({3, 5, N}, gen, 0.f, 1.f, dt);
        const std::string tag = std::string(variant) + " N " + std::to_string(N) + " " + dtype_name(dt);
        Tensor y = ops::softmax(x);
        expect_close(ops::softmax(gpu(x)), y, tol_for(dt, kF32Reduction), "softmax " + tag);
        expect_close(ops::softmax_backward(gpu(y), gpu(dy)), ops::softmax_backward(y, dy),
                     tol_for(dt, kF32Reduction), "softmax_backward " + tag);
      }
  });
}

TEST_F(L04_CudaSoftmax, CausalForwardAndBackwardMatchCpu) {
  Generator gen(12);
  for_each_variant([&](const char* variant) {
    for (std::int64_t T : {1, 5, 64})
      for (float scale : {1.f, 0.125f}) {
        Tensor x = Tensor::randn({2, 3, T, T}, gen), dy = Tensor::randn({2, 3, T, T}, gen);
        const std::string tag = std::string(variant) + " T " + std::to_string(T);
        Tensor y = ops::causal_softmax(x, scale);
        expect_close(ops::causal_softmax(gpu(x), scale), y, kF32Reduction, "causal_softmax " + tag);
        expect_close(ops::causal_softmax_backward(gpu(y), gpu(dy), scale), ops::causal_softmax_backward(y, dy, scale),
                     kF32Reduction, "causal_softmax_backward " + tag);
      }
  });
}

TEST_F(L04_CudaCrossEntropy, FusedForwardAndBackwardMatchCpu) {
  Generator gen(13);
  const std::int64_t N = 9, V = 70;
  Tensor logits = Tensor::randn({N, V}, gen, 0.f, 2.f);
  Tensor targets = Tensor::from_ints({3, -1, 0, 69, 5, 5, -1, 12, 40}, {N});
  auto c = ops::cross_entropy(logits, targets, -1);
  auto g = ops::cross_entropy(gpu(logits), gpu(targets), -1);
  EXPECT_EQ(g.count, c.count);
  expect_close(g.loss, c.loss, kF32Reduction, "cross_entropy loss");
  expect_close(g.probs, c.probs, kF32Reduction, "cross_entropy probs");
  Tensor dloss = Tensor::scalar(0.7f);
  expect_close(ops::cross_entropy_backward(g.probs, gpu(targets), gpu(dloss), g.count, -1),
               ops::cross_entropy_backward(c.probs, targets, dloss, c.count, -1), kF32Reduction,
               "cross_entropy_backward");
  Tensor bf = logits.to(DType::bf16);
  expect_close(ops::cross_entropy(gpu(bf), gpu(targets)).loss, ops::cross_entropy(bf, targets).loss, kF32Reduction,
               "cross_entropy of bf16 logits");
}

TEST_F(L04_CudaCrossEntropy, AllIgnoredIsNanAndBadTargetThrows) {
  Tensor logits = gpu(Tensor::zeros({2, 4}));
  auto out = ops::cross_entropy(logits, gpu(Tensor::from_ints({-1, -1}, {2})), -1);
  EXPECT_EQ(out.count, 0);
  EXPECT_TRUE(std::isnan(host(out.loss).item()));
  const std::string err =
      mt_test::error_of([&] { ops::cross_entropy(logits, gpu(Tensor::from_ints({1, 4}, {2})), -1); });
  EXPECT_TRUE(mt_test::contains(err, "target 4 at row 1 is out of range [0, 4)")) << err;
}

TEST_F(L04_CudaLayerNorm, ForwardAndBackwardMatchCpu) {
  Generator gen(14);
  for_each_variant([&](const char* variant) {
    for (DType dt : {DType::f32, DType::bf16}) {
      const std::int64_t C = 48;
      Tensor x = Tensor::randn({4, 6, C}, gen, 0.5f, 2.f, dt), w = Tensor::randn({C}, gen, 1.f, 0.1f, dt);
      Tensor b = Tensor::randn({C}, gen, 0.f, 0.1f, dt), dy = Tensor::randn({4, 6, C}, gen, 0.f, 1.f, dt);
      const std::string tag = std::string(variant) + " " + dtype_name(dt);
      const Tol t = tol_for(dt, kF32Reduction);
      auto c = ops::layernorm(x, w, b);
      auto g = ops::layernorm(gpu(x), gpu(w), gpu(b));
      expect_close(g.y, c.y, t, "layernorm y " + tag);
      expect_close(g.mean, c.mean, kF32Reduction, "layernorm mean " + tag);
      expect_close(g.rstd, c.rstd, kF32Reduction, "layernorm rstd " + tag);
      auto cg = ops::layernorm_backward(dy, x, w, c.mean, c.rstd);
      auto gg = ops::layernorm_backward(gpu(dy), gpu(x), gpu(w), g.mean, g.rstd);
      expect_close(gg.dx, cg.dx, t, "layernorm dx " + tag);
      expect_close(gg.dweight, cg.dweight, t, "layernorm dweight " + tag);
      expect_close(gg.dbias, cg.dbias, t, "layernorm dbias " + tag);
    }
  });
}

TEST_F(L04_CudaEmbedding, GatherAndScatterAddMatchCpu) {
  Generator gen(15);
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor w = Tensor::randn({10, 12}, gen, 0.f, 1.f, dt);
    Tensor idx = Tensor::from_ints({1, 3, 3, 9, 0, 1, 1, 7}, {2, 4});  // repeated ids collide in the backward
    Tensor dy = Tensor::randn({2, 4, 12}, gen, 0.f, 1.f, dt);
    expect_close(ops::embedding(gpu(w), gpu(idx)), ops::embedding(w, idx), tol_for(dt, kF32Elementwise), "embedding");
    expect_close(ops::embedding_backward(gpu(dy), gpu(idx), 10), ops::embedding_backward(dy, idx, 10),
                 tol_for(dt, kF32Reduction), "embedding_backward");
  }
  const std::string err = mt_test::error_of(
      [&] { ops::embedding(gpu(Tensor::zeros({4, 2})), gpu(Tensor::from_ints({0, 5}, {2}))); });
  EXPECT_TRUE(mt_test::contains(err, "embedding: id 5 at position 1 is out of range [0, 4)")) << err;
}

TEST_F(L04_CudaAdamW, FusedStepMatchesCpu) {
  Generator gen(16);
  for (DType dt : {DType::f32, DType::bf16}) {
    const std::int64_t n = 1000;
    Tensor p = Tensor::randn({n}, gen, 0.f, 1.f, dt), m = Tensor::zeros({n}), v = Tensor::zeros({n});
    Tensor gp = gpu(p), gm = gpu(m), gv = gpu(v);
    for (std::int64_t step = 1; step <= 3; ++step) {
      Tensor grad = Tensor::randn({n}, gen, 0.f, 1.f, dt);
      ops::AdamWParams hp{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, step};
      ops::adamw_step(p, grad, m, v, hp);
      ops::adamw_step(gp, gpu(grad), gm, gv, hp);
    }
    expect_close(gp, p, tol_for(dt, kF32Elementwise), std::string("adamw param ") + dtype_name(dt));
    expect_close(gm, m, kF32Elementwise, "adamw m");
    expect_close(gv, v, kF32Elementwise, "adamw v");
  }
}

}  // namespace
