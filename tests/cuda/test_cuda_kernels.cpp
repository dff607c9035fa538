// L04: elementwise, reduction and matmul kernels on the GPU against the CPU reference.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "minitorch/ops.h"
#include "minitorch/random.h"

namespace {
using namespace minitorch;
using namespace mt_cuda_test;

class L04_CudaElementwise : public CudaTest {};
class L04_CudaReduce : public CudaTest {};
class L04_CudaMatmul : public CudaTest {};

TEST_F(L04_CudaElementwise, BinaryWithBroadcastingMatchesCpu) {
  Generator gen(2);
  const std::vector<std::pair<Shape, Shape>> cases{
      {{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{2, 3, 4}, {3, 1}}, {{2, 1, 4}, {1, 3, 1}}, {{3}, {}}, {{}, {2, 2}}};
  for (DType dt : {DType::f32, DType::bf16})
    for (const auto& [sa, sb] : cases) {
      Tensor a = Tensor::randn(sa, gen, 0.f, 1.f, dt), b = Tensor::uniform(sb, gen, 0.5f, 2.f, dt);
      const std::string tag = shape_str(sa) + " op " + shape_str(sb) + " " + dtype_name(dt);
      const Tol t = tol_for(dt, kF32Elementwise);
      expect_close(ops::add(gpu(a), gpu(b)), ops::add(a, b), t, "add " + tag);
      expect_close(ops::sub(gpu(a), gpu(b)), ops::sub(a, b), t, "sub " + tag);
      expect_close(ops::mul(gpu(a), gpu(b)), ops::mul(a, b), t, "mul " + tag);
      expect_close(ops::div(gpu(a), gpu(b)), ops::div(a, b), t, "div " + tag);
    }
}

TEST_F(L04_CudaElementwise, StridedInputsAreMadeContiguousOnTheDevice) {
  Generator gen(3);
  Tensor a = Tensor::randn({4, 6, 5}, gen), b = Tensor::randn({5, 6}, gen);
  Tensor ga = gpu(a).permute({2, 0, 1}), gb = gpu(b).transpose(0, 1);  // device views, not copies
  expect_close(ops::add(ga.narrow(0, 1, 3), gb), ops::add(a.permute({2, 0, 1}).narrow(0, 1, 3), b.transpose(0, 1)),
               kF32Elementwise, "add of strided views");
  Tensor e = gpu(Tensor::randn({1, 6}, gen));
  expect_close(ops::exp(e.expand({4, 6})), ops::exp(host(e).expand({4, 6})), kF32Elementwise, "exp of expanded");
}

TEST_F(L04_CudaElementwise, UnaryOpsMatchCpu) {
  Generator gen(4);
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor x = Tensor::uniform({3, 17}, gen, 0.1f, 3.f, dt), gx = gpu(x);
    const Tol t = tol_for(dt, kF32Elementwise);
    expect_close(ops::affine(gx, 1.5f, -0.25f), ops::affine(x, 1.5f, -0.25f), t, "affine");
    expect_close(ops::neg(gx), ops::neg(x), t, "neg");
    expect_close(ops::exp(gx), ops::exp(x), t, "exp");
    expect_close(ops::log(gx), ops::log(x), t, "log");
    expect_close(ops::tanh(gx), ops::tanh(x), t, "tanh");
    expect_close(ops::sqrt(gx), ops::sqrt(x), t, "sqrt");
    for (float p : {2.f, 1.f, 0.5f, 3.f}) expect_close(ops::pow(gx, p), ops::pow(x, p), t, "pow");
  }
}

TEST_F(L04_CudaElementwise, InPlaceAddAndScaleMatchCpu) {
  Generator gen(5);
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor dst = Tensor::randn({6, 7}, gen, 0.f, 1.f, dt), src = Tensor::randn({7, 6}, gen, 0.f, 1.f, DType::bf16);
    Tensor gdst = gpu(dst);
    ops::add_(gdst, gpu(src).transpose(0, 1), 0.5f);
    ops::add_(dst, src.transpose(0, 1), 0.5f);
    expect_close(gdst, dst, tol_for(dt, kF32Elementwise), "add_");
    ops::scale_(gdst, -3.f);
    ops::scale_(dst, -3.f);
    expect_close(gdst, dst, tol_for(dt, kF32Elementwise), "scale_");
  }
}

TEST_F(L04_CudaElementwise, GeluForwardAndBackwardMatchCpu) {
  Generator gen(6);
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor x = Tensor::randn({5, 33}, gen, 0.f, 2.f, dt), dy = Tensor::randn({5, 33}, gen, 0.f, 1.f, dt);
    expect_close(ops::gelu(gpu(x)), ops::gelu(x), tol_for(dt, kF32Elementwise), "gelu");
    expect_close(ops::gelu_backward(gpu(x), gpu(dy)), ops::gelu_backward(x, dy), tol_for(dt, kF32Elementwise),
                 "gelu_backward");
  }
}

TEST_F(L04_CudaReduce, SumOverDimsMatchesCpu) {
  Generator gen(7);
  Tensor x = Tensor::randn({3, 4, 50, 2}, gen);
  const std::vector<std::vector<std::int64_t>> dim_sets{{}, {0}, {1}, {2}, {3}, {0, 2}, {1, 3}, {0, 1, 2, 3}};
  for_each_variant([&](const char* variant) {
    for (const auto& dims : dim_sets)
      for (bool keep : {false, true})
        for (DType dt : {DType::f32, DType::bf16}) {
          Tensor xd = x.to(dt);
          expect_close(ops::sum(gpu(xd), dims, keep), ops::sum(xd, dims, keep), tol_for(dt, kF32Reduction),
                       std::string("sum ") + variant + " dims " + shape_str(dims) + (keep ? " keepdim" : ""));
        }
    expect_close(ops::mean(gpu(x), {-1}), ops::mean(x, {-1}), kF32Reduction, std::string("mean ") + variant);
  });
}

TEST_F(L04_CudaReduce, MaxLastAndSumSquaresMatchCpu) {
  Generator gen(8);
  Tensor x = Tensor::randn({7, 300}, gen);
  expect_close(ops::max_last(gpu(x)), ops::max_last(x), kF32Reduction, "max_last");
  expect_close(ops::max_last(gpu(x).transpose(0, 1)), ops::max_last(x.transpose(0, 1)), kF32Reduction,
               "max_last of a transposed view");
  Tensor big = Tensor::randn({1000, 333}, gen);
  const double c = ops::sum_squares(big), g = ops::sum_squares(gpu(big));
  EXPECT_NEAR(g, c, 1e-9 * c);  // both accumulate in double
}

TEST_F(L04_CudaMatmul, AllTransposesAndBatchingMatchCpu) {
  Generator gen(9);
  const std::int64_t M = 13, K = 29, N = 7;
  for_each_variant([&](const char* variant) {
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool shared_b : {false, true})
          for (DType dt : {DType::f32, DType::bf16}) {
            Shape sa = ta ? Shape{2, 3, K, M} : Shape{2, 3, M, K};
            Shape sb = tb ? Shape{N, K} : Shape{K, N};
            if (!shared_b) sb.insert(sb.begin(), {2, 3});
            Tensor a = Tensor::randn(sa, gen, 0.f, 1.f, dt), b = Tensor::randn(sb, gen, 0.f, 1.f, dt);
            expect_close(ops::matmul(gpu(a), gpu(b), ta, tb), ops::matmul(a, b, ta, tb), tol_for(dt, kF32Reduction),
                         std::string("matmul ") + variant + " ta " + std::to_string(ta) + " tb " + std::to_string(tb) +
                             " shared_b " + std::to_string(shared_b) + " " + dtype_name(dt));
          }
  });
}

TEST_F(L04_CudaMatmul, StridedAndLargeMatchCpu) {
  Generator gen(10);
  Tensor a = Tensor::randn({64, 256}, gen), b = Tensor::randn({256, 96}, gen);
  expect_close(ops::matmul(gpu(a), gpu(b)), ops::matmul(a, b), kF32Reduction, "matmul 64x256x96");
  Tensor at = gpu(a).transpose(0, 1);  // a strided view: made contiguous, then OP_T
  expect_close(ops::matmul(at, gpu(b).narrow(1, 0, 10), true, false),
               ops::matmul(a.transpose(0, 1), b.narrow(1, 0, 10), true, false), kF32Reduction, "matmul of views");
}

}  // namespace
