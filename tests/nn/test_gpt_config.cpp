// L03 GPT: named configs, validation, JSON metadata.
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

// ---------------- config ----------------
TEST(L03_GPT, NamedConfigs) {
  auto baby = nn::GPTConfig::named("baby");
  EXPECT_EQ(baby.n_layer, 4);
  EXPECT_EQ(baby.n_head, 4);
  EXPECT_EQ(baby.n_embd, 128);
  EXPECT_EQ(baby.block_size, 64);
  EXPECT_EQ(baby.vocab_size, 0) << "set later from the tokenizer";
  EXPECT_TRUE(baby.bias);
  auto small = nn::GPTConfig::named("small");
  EXPECT_EQ(small.n_layer, 6);
  EXPECT_EQ(small.n_head, 6);
  EXPECT_EQ(small.n_embd, 384);
  EXPECT_EQ(small.block_size, 256);
  auto gpt2 = nn::GPTConfig::named("gpt2");
  EXPECT_EQ(gpt2.n_layer, 12);
  EXPECT_EQ(gpt2.n_head, 12);
  EXPECT_EQ(gpt2.n_embd, 768);
  EXPECT_EQ(gpt2.block_size, 1024);
  EXPECT_EQ(gpt2.vocab_size, 50257);
  EXPECT_NO_THROW(gpt2.validate());
  try {
    nn::GPTConfig::named("gpt3");
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("gpt3"), std::string::npos);
    EXPECT_NE(msg.find("baby, small, gpt2"), std::string::npos) << msg;
  }
}

TEST(L03_GPT, ConfigValidate) {
  auto c = nn::GPTConfig::named("baby");
  EXPECT_THROW(c.validate(), std::invalid_argument) << "vocab_size 0 is not set yet";
  c.vocab_size = 65;
  EXPECT_NO_THROW(c.validate());
  c.n_head = 3;
  try {
    c.validate();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("divisible"), std::string::npos) << e.what();
  }
  c.n_head = 4;
  c.n_layer = 0;
  EXPECT_THROW(c.validate(), std::invalid_argument);
  Generator gen(0);
  c.n_layer = 4, c.vocab_size = 0;
  EXPECT_THROW(nn::GPT(c, gen), std::invalid_argument);
}

TEST(L03_GPT, ConfigJsonRoundTrip) {
  auto c = baby_config();
  c.bias = false;
  nlohmann::json j = c.to_json();
  EXPECT_EQ(j.at("n_embd"), 128);
  EXPECT_EQ(j.at("bias"), false);
  EXPECT_EQ(nn::GPTConfig::from_json(j), c);
  // nanoGPT's model_args carry dropout
  j["dropout"] = 0.0;
  EXPECT_EQ(nn::GPTConfig::from_json(j), c);
  j["dropout"] = 0.1;
  EXPECT_THROW(nn::GPTConfig::from_json(j), std::invalid_argument);
  j.erase("dropout");
  j["n_embed"] = 3;  // a typo
  try {
    nn::GPTConfig::from_json(j);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'n_embed'"), std::string::npos) << e.what();
  }
  j.erase("n_embed");
  // A key read from a checkpoint's model_args may be any length: quoted as an excerpt.
  j[std::string(50000, 'n')] = 3;
  try {
    nn::GPTConfig::from_json(j);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'nnnn"), std::string::npos) << std::string(e.what()).substr(0, 300);
    EXPECT_LT(std::string(e.what()).size(), 250u);
  }
  j.erase(std::string(50000, 'n'));
  j.erase("n_layer");
  EXPECT_THROW(nn::GPTConfig::from_json(j), std::invalid_argument);
}

TEST(L03_GPT, ParameterShapesAreNamedParametersWithoutBuildingTheModel) {
  // The estimator plans a model's ZeRO partition from these; they must be the built model's, in order.
  for (bool bias : {true, false}) {
    nn::GPTConfig c;
    c.n_layer = 2, c.n_head = 2, c.n_embd = 12, c.block_size = 8, c.vocab_size = 11, c.bias = bias;
    Generator gen(3);
    nn::GPT model(c, gen);
    const nn::NamedTensors built = model.named_parameters();
    const auto shapes = nn::GPT::parameter_shapes(c);
    ASSERT_EQ(shapes.size(), built.size()) << "bias " << bias;
    std::int64_t psi = 0;
    for (std::size_t i = 0; i < built.size(); ++i) {
      EXPECT_EQ(shapes[i].first, built[i].first);
      EXPECT_EQ(shapes[i].second, built[i].second.shape()) << built[i].first;
      psi += shape_numel(shapes[i].second);
    }
    EXPECT_EQ(psi, c.num_parameters());
  }
  nn::GPTConfig unset;  // vocab_size 0
  EXPECT_THROW(nn::GPT::parameter_shapes(unset), std::invalid_argument);
}
