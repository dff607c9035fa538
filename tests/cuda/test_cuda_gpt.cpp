// L04: the whole GPT forward and backward on the GPU against the CPU (tiny config).
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "cuda_test_util.h"
#include "minitorch/random.h"
#include "nn/gpt.h"

namespace {
using namespace minitorch;
using namespace mt_cuda_test;

class L04_CudaGPT : public CudaTest {};

// Moves every parameter's storage to the GPU in place (tied weights stay tied: one TensorImpl).
void move_to_gpu(nn::GPT& model) {
  for (Tensor& p : model.parameters()) {
    if (p.device().is_cuda()) continue;
    Tensor g = gpu(p);
    p.impl().storage = g.storage();
    p.impl().strides = g.strides();
    p.impl().offset = 0;
  }
}

TEST_F(L04_CudaGPT, ForwardAndBackwardMatchCpu) {
  nn::GPTConfig cfg;
  cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 16, cfg.block_size = 8, cfg.vocab_size = 11, cfg.bias = true;
  Generator g1(1337), g2(1337);
  nn::GPT cpu_model(cfg, g1), gpu_model(cfg, g2);
  move_to_gpu(gpu_model);
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
