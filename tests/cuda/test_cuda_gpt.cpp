// L04: the whole GPT on the GPU against the CPU: one forward and backward (tiny config), then 50 training
// steps in fp32 and in bf16 (f32 master weights) whose losses must follow the CPU run's. The kernels one
// by one are checked by the op table (tests/backend_ops/, test-backend_ops --backend=cuda).
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "cuda_test_util.h"
#include "minitorch/random.h"
#include "nn/gpt.h"
#include "optim/adamw.h"

#include <cmath>
#include <cstdio>

namespace {
using namespace minitorch;
using namespace mt_cuda_test;

class L04_CudaGPT : public CudaTest {};

TEST_F(L04_CudaGPT, ForwardAndBackwardMatchCpu) {
  nn::GPTConfig cfg;
  cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 16, cfg.block_size = 8, cfg.vocab_size = 11, cfg.bias = true;
  Generator g1(1337), g2(1337);
  nn::GPT cpu_model(cfg, g1), gpu_model(cfg, g2);
  gpu_model.to(Device::cuda());
  std::vector<std::int32_t> ids(2 * 8), tg(2 * 8);
  Generator data(7);
  for (auto& i : ids) i = static_cast<std::int32_t>(data.next_below(11));
  for (auto& i : tg) i = static_cast<std::int32_t>(data.next_below(11));
  Tensor idx = Tensor::from_ints(ids, {2, 8}), tgt = Tensor::from_ints(tg, {2, 8});

  Tensor lc = cpu_model.loss(idx, tgt);
  Tensor lg = gpu_model.loss(gpu(idx), gpu(tgt));
  expect_close(lg, lc, kF32Reduction, "loss");
  autograd::backward(lc);
  autograd::backward(lg);
  auto pc = cpu_model.named_parameters(), pg = gpu_model.named_parameters();
  ASSERT_EQ(pc.size(), pg.size());
  for (std::size_t i = 0; i < pc.size(); ++i) {
    ASSERT_TRUE(pg[i].second.grad().defined()) << pg[i].first;
    expect_close(pg[i].second.grad(), pc[i].second.grad(), Tol{1e-3f, 1e-5f}, "grad of " + pc[i].first);
  }
}

}  // namespace

namespace {
using namespace minitorch;
using namespace mt_cuda_test;

class L04_CudaTrain : public CudaTest {};

// The losses of `steps` AdamW steps of a 2-layer GPT on `device` with `dtype` weights (bf16: AdamW keeps
// an f32 master). The data: 4 windows of 16 tokens from a fixed pattern, the same for every device.
std::vector<float> train(Device device, DType dtype, int steps) {
  nn::GPTConfig cfg;
  cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 32, cfg.block_size = 16, cfg.vocab_size = 64, cfg.bias = true;
  Generator init(1337), data(7);
  nn::GPT model(cfg, init);
  model.to(dtype);
  model.to(device);
  optim::AdamW opt(model.named_parameters(), {3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f});
  const int B = 4, T = 16;
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    std::vector<std::int32_t> x(B * T), y(B * T);
    for (int b = 0; b < B; ++b) {  // a learnable rhythm: each token is the one before plus 5
      const auto start = static_cast<std::int32_t>(data.next_below(64));
      for (int t = 0; t < T; ++t) x[b * T + t] = (start + 5 * t) % 64, y[b * T + t] = (start + 5 * (t + 1)) % 64;
    }
    Tensor idx = Tensor::from_ints(x, {B, T}).to(device), tgt = Tensor::from_ints(y, {B, T}).to(device);
    opt.zero_grad();
    Tensor loss = model.loss(idx, tgt);
    autograd::backward(loss);
    opt.step();
    losses.push_back(loss.to(Device::cpu()).to(DType::f32).item());
  }
  return losses;
}

void expect_same_losses(const std::vector<float>& gpu, const std::vector<float>& cpu, double rel, const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  for (std::size_t i = 0; i < cpu.size(); ++i)
    EXPECT_NEAR(gpu[i], cpu[i], rel * std::fabs(cpu[i])) << what << " step " << i;
  std::printf("%s: step 0 loss cpu %.6f gpu %.6f; step %zu loss cpu %.6f gpu %.6f\n", what, cpu.front(), gpu.front(),
              cpu.size() - 1, cpu.back(), gpu.back());
  EXPECT_LT(cpu.back(), 0.5f * cpu.front()) << "the model must learn the rhythm";
}

TEST_F(L04_CudaTrain, Fp32FiftyStepsGiveTheCpuLosses) {
  expect_same_losses(train(Device::cuda(), DType::f32, 50), train(Device::cpu(), DType::f32, 50), 1e-3, "fp32");
}

TEST_F(L04_CudaTrain, Bf16FiftyStepsGiveTheCpuLosses) {
  expect_same_losses(train(Device::cuda(), DType::bf16, 50), train(Device::cpu(), DType::bf16, 50), 2e-2, "bf16");
}

}  // namespace
