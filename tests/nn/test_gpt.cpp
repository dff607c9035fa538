// L03 GPT: nanoGPT names and shapes, parameter count, init, determinism, forward, causality,
// memory accounting.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "nn/gpt.h"
#include "nn/gpt_test_util.h"

using namespace minitorch;
using namespace minitorch::test;

// ---------------- layout ----------------
TEST(L03_GPT, ParameterNamesAndShapesMatchNanoGPTBaby) {
  Generator gen(1337);
  nn::GPT model(baby_config(), gen);
  expect_nanogpt_layout(model);
  EXPECT_EQ(model.blocks.size(), 4u);
}

TEST(L03_GPT, ParameterNamesWithoutBias) {
  Generator gen(1337);
  auto c = tiny_config(/*bias=*/false);
  nn::GPT model(c, gen);
  expect_nanogpt_layout(model);
  EXPECT_EQ(model.num_parameters(), c.num_parameters());
  // V·C + T·C + L·(12C² + 2C) + C = 40 + 32 + 768 + 16 + 8
  EXPECT_EQ(model.num_parameters(), 40 + 32 + 784 + 8);
}

TEST(L03_GPT, GPT2LayoutCountAndParamBytes) {
  // GPT-2 124M. Per block: ln_1 2C, c_attn 3C·C + 3C, attn.c_proj C·C + C, ln_2 2C,
  // c_fc 4C·C + 4C, mlp.c_proj 4C·C + C  =  12C² + 13C.  Embeddings V·C + T·C, ln_f 2C,
  // lm_head tied (0):  Ψ = V·C + T·C + L·(12C² + 13C) + 2C.
  const std::int64_t V = 50257, T = 1024, C = 768, L = 12;
  const std::int64_t psi = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
  EXPECT_EQ(psi, 124439808);  // nanoGPT: "number of parameters: 124.44M" (wpe included)
  const std::int64_t param_before = memory_stats().current(MemTag::param);
  Generator gen(1337);
  nn::GPT model(nn::GPTConfig::named("gpt2"), gen);
  expect_nanogpt_layout(model);
  EXPECT_EQ(model.num_parameters(), psi);
  EXPECT_EQ(model.config().num_parameters(), psi);
  EXPECT_EQ(memory_stats().current(MemTag::param) - param_before, 4 * psi) << "params are exactly 4Ψ bytes (f32)";
}

TEST(L03_GPT, TiedHeadIsOneTensor) {
  Generator gen(1);
  nn::GPT model(tiny_config(), gen);
  EXPECT_TRUE(model.lm_head->weight.same(model.wte->weight));
  auto sd = model.state_dict();
  EXPECT_TRUE(sd.front().second.same(sd.back().second));
  EXPECT_EQ(model.lm_head->weight.name(), "transformer.wte.weight");
  // one gradient, the sum of both uses
  Generator data(2);
  Tensor idx = random_tokens(2, 4, 5, data), tgt = random_tokens(2, 4, 5, data);
  autograd::backward(model.loss(idx, tgt));
  EXPECT_TRUE(model.wte->weight.grad().defined());
}

TEST(L03_GPT, ParamBytesAreExactly4Psi) {
  const auto before = memory_stats();
  Generator gen(3);
  nn::GPT model(baby_config(), gen);
  const auto after = memory_stats();
  const std::int64_t psi = model.num_parameters();
  EXPECT_EQ(psi, 65 * 128 + 64 * 128 + 4 * (12 * 128 * 128 + 13 * 128) + 2 * 128);
  EXPECT_EQ(after.current(MemTag::param) - before.current(MemTag::param), 4 * psi);
  EXPECT_EQ(after.current(MemTag::grad), before.current(MemTag::grad));
  EXPECT_EQ(after.current(MemTag::optim), before.current(MemTag::optim));
}

// ---------------- init ----------------
TEST(L03_GPT, InitStatistics) {
  Generator gen(1337);
  auto c = baby_config();
  nn::GPT model(c, gen);
  const double proj_std = 0.02 / std::sqrt(2.0 * c.n_layer);  // 0.00707
  for (auto& [name, p] : model.named_parameters()) {
    std::vector<float> v = p.to_vector();
    auto ends_with = [&name = name](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends_with("c_proj.weight")) {
      EXPECT_NEAR(std_of(v), proj_std, 0.03 * proj_std) << name;
      EXPECT_NEAR(mean_of(v), 0.0, 0.03 * proj_std) << name;
    } else if (ends_with(".bias")) {
      EXPECT_EQ(std_of(v), 0.0) << name;
      EXPECT_EQ(mean_of(v), 0.0) << name;
    } else if (name.find("ln_") != std::string::npos) {
      EXPECT_EQ(std_of(v), 0.0) << name;
      EXPECT_EQ(mean_of(v), 1.0) << name;
    } else {  // wte, wpe, c_attn, c_fc
      EXPECT_NEAR(std_of(v), 0.02, 0.03 * 0.02) << name;
      EXPECT_NEAR(mean_of(v), 0.0, 0.03 * 0.02) << name;
    }
  }
}

TEST(L03_GPT, SameSeedSameWeights) {
  Generator g1(42), g2(42), g3(43);
  nn::GPT a(baby_config(), g1), b(baby_config(), g2), c(baby_config(), g3);
  auto sa = a.named_parameters(), sb = b.named_parameters(), sc = c.named_parameters();
  for (std::size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(sa[i].second.to_vector(), sb[i].second.to_vector()) << sa[i].first;
  EXPECT_NE(sa[0].second.to_vector(), sc[0].second.to_vector());
  EXPECT_EQ(g1.counter(), g2.counter()) << "construction consumed the same draws";
}

// ---------------- forward ----------------
TEST(L03_GPT, ForwardIsEmbedBlocksHead) {
  Generator gen(5);
  nn::GPT model(baby_config(), gen);
  Generator data(6);
  Tensor idx = random_tokens(2, 16, 65, data);
  Tensor logits = model.forward(idx);
  EXPECT_EQ(logits.shape(), (Shape{2, 16, 65}));
  Tensor x = model.embed(idx);
  EXPECT_EQ(x.shape(), (Shape{2, 16, 128}));
  for (auto& block : model.blocks) x = block->forward(x);
  EXPECT_EQ(model.head(x).to_vector(), logits.to_vector());
}

TEST(L03_GPT, EmbedIsTokenPlusPosition) {
  Generator gen(5);
  nn::GPT model(tiny_config(), gen);
  Tensor idx = Tensor::from_ints({3, 0, 4}, {1, 3});
  Tensor x = model.embed(idx);
  for (std::int64_t t = 0; t < 3; ++t)
    for (std::int64_t ch = 0; ch < 8; ++ch)
      EXPECT_FLOAT_EQ(x.at({0, t, ch}), model.wte->weight.at({idx.to_int_vector()[t], ch}) +
                                            model.wpe->weight.at({t, ch}));
}

TEST(L03_GPT, TooLongSequenceIsAClearError) {
  Generator gen(5);
  nn::GPT model(tiny_config(), gen);  // block_size 4
  Tensor idx = Tensor::from_ints({0, 1, 2, 3, 4}, {1, 5});
  try {
    model.forward(idx);
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("length 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("block size is only 4"), std::string::npos) << msg;
  }
  EXPECT_THROW(model.forward(Tensor::from_vector({0, 1}, {1, 2})), std::invalid_argument) << "f32 ids";
  EXPECT_THROW(model.forward(Tensor::from_ints({0, 1}, {2})), std::invalid_argument) << "1-D ids";
  EXPECT_THROW(model.loss(Tensor::from_ints({0, 1}, {1, 2}), Tensor::from_ints({0, 1, 2}, {1, 3})),
               std::invalid_argument);
}

TEST(L03_GPT, CausalityFutureTokensDoNotChangeEarlierLogits) {
  Generator gen(7);
  nn::GPT model(baby_config(), gen);
  Generator data(8);
  const std::int64_t B = 2, T = 12, V = 65;
  Tensor idx = random_tokens(B, T, V, data);
  std::vector<std::int32_t> ids = idx.to_int_vector();
  const std::int64_t changed = 7;
  for (std::int64_t b = 0; b < B; ++b) ids[b * T + changed] = (ids[b * T + changed] + 1) % V;
  Tensor idx2 = Tensor::from_ints(ids, {B, T});
  Tensor l1 = model.forward(idx), l2 = model.forward(idx2);
  double max_before = 0, max_after = 0;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t v = 0; v < V; ++v) {
        double d = std::abs(l1.at({b, t, v}) - l2.at({b, t, v}));
        (t < changed ? max_before : max_after) = std::max(t < changed ? max_before : max_after, d);
      }
  EXPECT_LE(max_before, 1e-6) << "positions before the change must not see it";
  EXPECT_GT(max_after, 1e-3) << "positions from the change on do see it";
}

TEST(L03_GPT, LossAtInitIsNearLnV) {
  Generator gen(9);
  auto c = baby_config();
  nn::GPT model(c, gen);
  Generator data(10);
  Tensor idx = random_tokens(4, 64, 65, data), tgt = random_tokens(4, 64, 65, data);
  float loss = model.loss(idx, tgt).item();
  EXPECT_NEAR(loss, std::log(65.0), 0.1);  // small logits: nearly uniform predictions
}

TEST(L03_GPT, LossIgnoresIgnoreIndex) {
  Generator gen(9);
  nn::GPT model(tiny_config(), gen);
  Tensor idx = Tensor::from_ints({1, 2, 3, 4}, {1, 4});
  Tensor tgt_all = Tensor::from_ints({2, 3, 4, 0}, {1, 4});
  Tensor tgt_some = Tensor::from_ints({2, 3, -1, -1}, {1, 4});
  Tensor tgt_two = Tensor::from_ints({2, 3}, {1, 2});
  float partial = model.loss(idx, tgt_some).item();
  float two = model.loss(idx.narrow(1, 0, 2).contiguous(), tgt_two).item();  // causal: same first 2 rows
  EXPECT_NEAR(partial, two, 1e-6);
  EXPECT_NE(model.loss(idx, tgt_all).item(), partial);
}
