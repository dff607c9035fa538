// L03 Module: named parameters, state dicts, tied weights, zero_grad, modes, dtype conversion.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "autograd/functions.h"
#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "nn/gpt.h"
#include "nn/layers.h"
#include "nn/module.h"

using namespace minitorch;

namespace {
struct TwoLayer : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::LayerNorm> ln;
  explicit TwoLayer(Generator& gen) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8, true, gen));
    ln = register_module("ln", std::make_shared<nn::LayerNorm>(8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 2, false, gen));
  }
  Tensor forward(const Tensor& x) const { return fc2->forward(autograd::gelu(ln->forward(fc1->forward(x)))); }
};

/// A module whose second Linear reuses the first's weight (like the GPT's tied head).
struct Tied : nn::Module {
  std::shared_ptr<nn::Embedding> emb;
  std::shared_ptr<nn::Linear> head;
  explicit Tied(Generator& gen) {
    auto inner = register_module("inner", std::make_shared<nn::Module>());
    emb = inner->register_module("emb", std::make_shared<nn::Embedding>(5, 3, gen));
    head = register_module("head", std::make_shared<nn::Linear>(emb->weight));
  }
};

nn::GPTConfig tiny_config() {
  nn::GPTConfig c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 8, c.block_size = 4, c.vocab_size = 5;
  return c;
}
}  // namespace

TEST(L03_Module, NamedParametersInRegistrationOrder) {
  Generator gen(1);
  TwoLayer net(gen);
  auto named = net.named_parameters();
  ASSERT_EQ(named.size(), 5u);
  const char* expected[] = {"fc1.weight", "fc1.bias", "ln.weight", "ln.bias", "fc2.weight"};
  for (std::size_t i = 0; i < named.size(); ++i) {
    EXPECT_EQ(named[i].first, expected[i]);
    EXPECT_EQ(named[i].second.name(), expected[i]) << "the tensor carries its full name";
    EXPECT_TRUE(named[i].second.requires_grad());
    EXPECT_TRUE(named[i].second.is_leaf());
    EXPECT_EQ(named[i].second.storage()->tag(), MemTag::param);
  }
  EXPECT_EQ(named[0].second.shape(), (Shape{8, 4}));
  EXPECT_EQ(named[4].second.shape(), (Shape{2, 8}));
  EXPECT_EQ(net.num_parameters(), 8 * 4 + 8 + 8 + 8 + 2 * 8);
  EXPECT_EQ(net.parameters().size(), 5u);
}

TEST(L03_Module, ParameterLookupAndDuplicateNames) {
  Generator gen(1);
  nn::Linear fc(3, 2, true, gen);
  EXPECT_TRUE(fc.parameter("weight").same(fc.weight));
  EXPECT_THROW(fc.parameter("nope"), std::invalid_argument);
  EXPECT_THROW(fc.register_parameter("weight", Tensor::zeros({2})), std::invalid_argument);
  EXPECT_THROW(fc.register_parameter("a.b", Tensor::zeros({2})), std::invalid_argument);
}

TEST(L03_Module, NamedModulesDepthFirst) {
  Generator gen(1);
  TwoLayer net(gen);
  auto mods = net.named_modules();
  ASSERT_EQ(mods.size(), 4u);
  EXPECT_EQ(mods[0].first, "");
  EXPECT_EQ(mods[1].first, "fc1");
  EXPECT_EQ(mods[2].first, "ln");
  EXPECT_EQ(mods[3].first, "fc2");
}

TEST(L03_Module, TiedWeightOnceInParametersTwiceInStateDict) {
  Generator gen(2);
  Tied m(gen);
  auto named = m.named_parameters();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].first, "inner.emb.weight");
  EXPECT_EQ(named[0].second.name(), "inner.emb.weight") << "a tied tensor keeps its first name";
  auto sd = m.state_dict();
  ASSERT_EQ(sd.size(), 2u);
  EXPECT_EQ(sd[1].first, "head.weight");
  EXPECT_TRUE(sd[0].second.same(sd[1].second));
  EXPECT_EQ(m.num_parameters(), 15);
}

TEST(L03_Module, ZeroGradSetsGradientsToNone) {
  Generator gen(3);
  TwoLayer net(gen);
  Tensor x = Tensor::randn({2, 4}, gen);
  autograd::backward(autograd::sum(net.forward(x)));
  for (auto& p : net.parameters()) EXPECT_TRUE(p.grad().defined());
  net.zero_grad();
  for (auto& p : net.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(L03_Module, LoadStateDictCopiesValues) {
  Generator g1(10), g2(20);
  TwoLayer a(g1), b(g2);
  EXPECT_NE(a.fc1->weight.to_vector(), b.fc1->weight.to_vector());
  Tensor b_weight_before = b.fc1->weight;
  b.load_state_dict(a.state_dict());
  EXPECT_TRUE(b.fc1->weight.same(b_weight_before)) << "values are copied in, handles stay";
  auto sa = a.state_dict(), sb = b.state_dict();
  for (std::size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(sa[i].second.to_vector(), sb[i].second.to_vector());
  EXPECT_FALSE(b.fc1->weight.storage() == a.fc1->weight.storage());
}

TEST(L03_Module, LoadStateDictErrorsNameTheKey) {
  Generator gen(4);
  TwoLayer net(gen);
  auto sd = net.state_dict();
  // shape mismatch: names the key and both shapes
  auto bad = sd;
  bad[0].second = Tensor::zeros({4, 8});
  try {
    net.load_state_dict(bad);
    FAIL() << "expected a size mismatch";
  } catch (const std::runtime_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("fc1.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4, 8)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(8, 4)"), std::string::npos) << msg;
  }
  // unexpected key
  auto extra = sd;
  extra.emplace_back("fc3.weight", Tensor::zeros({1}));
  try {
    net.load_state_dict(extra);
    FAIL() << "expected an unexpected key error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected key 'fc3.weight'"), std::string::npos) << e.what();
  }
  // missing key: strict throws, non-strict loads the rest
  auto missing = sd;
  missing.erase(missing.begin() + 1);  // fc1.bias
  try {
    net.load_state_dict(missing);
    FAIL() << "expected a missing key error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing key 'fc1.bias'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(net.load_state_dict(missing, /*strict=*/false));
  // nothing is copied when a check fails
  Generator other(99);
  TwoLayer src(other);
  auto src_sd = src.state_dict();
  src_sd.back().second = Tensor::zeros({3, 3});
  std::vector<float> before = net.fc1->weight.to_vector();
  EXPECT_THROW(net.load_state_dict(src_sd), std::runtime_error);
  EXPECT_EQ(net.fc1->weight.to_vector(), before);
}

TEST(L03_Module, LoadStateDictQuotesAtMost80CharactersOfAKey) {
  // L03_Fuzz.Checkpoint: a checkpoint whose tensor name was mutated into 80 000 characters
  // ('transformer.h.0.ln_[1,1,1,...') gave an error message quoting all of them.
  Generator gen(4);
  TwoLayer net(gen);
  auto sd = net.state_dict();
  sd.emplace_back("fc1.weight_" + std::string(80000, '1'), Tensor::zeros({1}));
  try {
    net.load_state_dict(sd);
    FAIL() << "expected an unexpected key error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unexpected key 'fc1.weight_1111"), std::string::npos) << msg.substr(0, 300);
    EXPECT_NE(msg.find("...' (the model has no such parameter)"), std::string::npos) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 200u);
  }
}

TEST(L03_Module, LoadStateDictRefusesIntegersForFloatWeights) {
  // An I32 checkpoint tensor over f32 bytes used to load as values of ~1e9 and train on (loss 1e11).
  Generator gen(5);
  TwoLayer net(gen);
  auto sd = net.state_dict();
  auto ints = sd;
  ints[0].second = Tensor::zeros(sd[0].second.shape(), DType::i32);
  std::vector<float> before = net.fc1->weight.to_vector();
  try {
    net.load_state_dict(ints);
    FAIL() << "expected a dtype mismatch";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("dtype mismatch for 'fc1.weight': checkpoint has i32, the model has f32 "
                                         "(expected f32, bf16 or f16)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(net.fc1->weight.to_vector(), before);
  auto halves = sd;  // bf16 converts: a bf16-trained checkpoint evaluates in f32
  halves[0].second = sd[0].second.to(DType::bf16);
  EXPECT_NO_THROW(net.load_state_dict(halves));
}

TEST(L03_Module, TiedWeightLoadsFromEitherName) {
  Generator g1(5), g2(6);
  Tied a(g1), b(g2);
  auto only_head = a.state_dict();
  only_head.erase(only_head.begin());  // keep just head.weight, as a deduplicating file would
  b.load_state_dict(only_head);
  EXPECT_EQ(b.emb->weight.to_vector(), a.emb->weight.to_vector());
}

TEST(L03_Module, TrainEvalPropagates) {
  Generator gen(7);
  TwoLayer net(gen);
  EXPECT_TRUE(net.is_training());
  net.eval();
  EXPECT_FALSE(net.is_training());
  EXPECT_FALSE(net.fc1->is_training());
  net.train();
  EXPECT_TRUE(net.ln->is_training());
}

TEST(L03_Module, ToBf16KeepsHandlesTiesAndHalvesParamBytes) {
  Generator gen(8);
  const std::int64_t before = memory_stats().current(MemTag::param);
  nn::GPT model(tiny_config(), gen);
  const std::int64_t psi = model.num_parameters();
  EXPECT_EQ(memory_stats().current(MemTag::param) - before, 4 * psi);
  Tensor wte = model.wte->weight;
  std::vector<float> f32_values = wte.to_vector();
  model.to(DType::bf16);
  EXPECT_EQ(memory_stats().current(MemTag::param) - before, 2 * psi);
  EXPECT_TRUE(model.wte->weight.same(wte));
  EXPECT_TRUE(model.lm_head->weight.same(wte));
  EXPECT_EQ(wte.dtype(), DType::bf16);
  std::vector<float> bf = wte.to_vector();
  for (std::size_t i = 0; i < bf.size(); ++i) EXPECT_EQ(bf[i], bf16_to_f32(f32_to_bf16(f32_values[i])));
  model.to(DType::f32);
  EXPECT_EQ(memory_stats().current(MemTag::param) - before, 4 * psi);
}
