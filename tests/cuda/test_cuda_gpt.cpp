// L04: the whole GPT on the GPU against the CPU: one forward and backward (tiny config), then 50 training
// steps in fp32 and in bf16 (f32 master weights) whose losses must follow the CPU run's, then the training
// engine (runtime/engine.h) on the GPU against the CPU engine. The kernels one by one are checked by the
// op table (tests/backend_ops/, test-backend_ops --backend=cuda).
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "cuda_test_util.h"
#include "data/batch_sampler.h"
#include "minitorch/allocator.h"
#include "runtime/config_error.h"
#include "runtime/engine.h"
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

// `falls_to`: the last CPU loss must be below this fraction of the first (the model learns).
void expect_same_losses(const std::vector<float>& gpu, const std::vector<float>& cpu, double rel, const char* what,
                        float falls_to = 0.5f) {
  ASSERT_EQ(gpu.size(), cpu.size());
  for (std::size_t i = 0; i < cpu.size(); ++i)
    EXPECT_NEAR(gpu[i], cpu[i], rel * std::fabs(cpu[i])) << what << " step " << i;
  std::printf("%s: step 0 loss cpu %.6f gpu %.6f; step %zu loss cpu %.6f gpu %.6f\n", what, cpu.front(), gpu.front(),
              cpu.size() - 1, cpu.back(), gpu.back());
  EXPECT_LT(cpu.back(), falls_to * cpu.front()) << "the model must learn the rhythm";
}

TEST_F(L04_CudaTrain, Fp32FiftyStepsGiveTheCpuLosses) {
  expect_same_losses(train(Device::cuda(), DType::f32, 50), train(Device::cpu(), DType::f32, 50), 1e-3, "fp32");
}

TEST_F(L04_CudaTrain, Bf16FiftyStepsGiveTheCpuLosses) {
  expect_same_losses(train(Device::cuda(), DType::bf16, 50), train(Device::cpu(), DType::bf16, 50), 2e-2, "bf16");
}

}  // namespace

namespace {
using namespace minitorch;
using namespace mt_cuda_test;

// The engine on `device` as minitorch-train --device drives it: the model moved there first, then
// runtime::initialize; train_batch uploads each micro-batch and reads the loss back.
std::string engine_config(const std::string& extra) {
  return R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}},
    "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16},
    "training": {"steps": 10, "seed": 11})" + extra + "}";
}

std::unique_ptr<runtime::Engine> engine_on(Device device, const std::string& extra) {
  const runtime::Config cfg = runtime::Config::from_json(engine_config(extra), 1, "gpu.json");
  Generator init(cfg.training.seed);
  auto model = std::make_shared<nn::GPT>(runtime::model_shape(cfg, 64), init);
  model->to(device);
  return runtime::initialize(model, cfg);
}

std::vector<float> engine_losses(Device device, const std::string& extra, int steps) {
  auto tokens = std::make_shared<std::vector<std::int32_t>>();
  for (int i = 0; i < 4096; ++i) tokens->push_back((7 * i + i / 64) % 64);  // a learnable rhythm
  auto engine = engine_on(device, extra);
  EXPECT_EQ(engine->device(), device);
  data::BatchSampler sampler(tokens, 4, 16, 11);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) losses.push_back(engine->train_batch(sampler));
  if (device.is_cuda()) {  // the model states live in the GPU's pool, under their tags
    const zero::ModelStateBytes& m = engine->measured_model_states();
    EXPECT_GT(m.param, 0);
    EXPECT_EQ(m.param, memory_stats(device).current(MemTag::param));
  }
  return losses;
}

TEST_F(L04_CudaTrain, TheEngineOnTheGpuGivesTheCpuEnginesLosses) {
  expect_same_losses(engine_losses(Device::cuda(), "", 10), engine_losses(Device::cpu(), "", 10), 1e-3, "engine fp32",
                     0.95f);
  const std::string bf16 = R"(, "bf16": {"enabled": true})";
  expect_same_losses(engine_losses(Device::cuda(), bf16, 10), engine_losses(Device::cpu(), bf16, 10), 2e-2, "engine bf16",
                     0.95f);
}

TEST_F(L04_CudaTrain, Fp16OnTheGpuIsOneConfigError) {
  try {
    engine_on(Device::cuda(), R"(, "fp16": {"enabled": true})");
    FAIL() << "fp16 on the GPU must be refused";
  } catch (const runtime::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("fp16 on --device cuda:0 is not available"), std::string::npos) << e.what();
  }
}

}  // namespace
