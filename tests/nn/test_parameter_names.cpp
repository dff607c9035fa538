// nn::parameter_place, the one parser of the GPT's parameter names (ZeRO-3's units, the pipeline's partition
// and stages): every name the GPT has maps to its part, and a name that is not the GPT's is one clear error.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

#include "nn/gpt.h"
#include "nn/parameter_names.h"

using namespace minitorch;
using nn::ModelPart;

TEST(L03_ParameterNames, EveryGptParameterHasItsPlace) {
  nn::GPTConfig g = nn::GPTConfig::named("baby");
  g.vocab_size = 65;
  std::map<std::int64_t, int> per_block;
  int embeddings = 0, final_norm = 0;
  for (const auto& [name, shape] : nn::GPT::parameter_shapes(g)) {
    const nn::ParameterPlace place = nn::parameter_place(name);
    switch (place.part) {
      case ModelPart::embeddings: ++embeddings; EXPECT_EQ(place.block, -1) << name; break;
      case ModelPart::block: ++per_block[place.block]; break;
      case ModelPart::final_norm: ++final_norm; EXPECT_EQ(place.block, -1) << name; break;
      case ModelPart::head: ADD_FAILURE() << name << ": the head's weight is wte's, not a parameter of its own"; break;
    }
  }
  EXPECT_EQ(embeddings, 2);  // wte, wpe
  EXPECT_EQ(final_norm, 2);  // ln_f weight and bias
  ASSERT_EQ(per_block.size(), static_cast<std::size_t>(g.n_layer));
  for (const auto& [block, n] : per_block) EXPECT_EQ(n, per_block.at(0)) << "block " << block;
  EXPECT_EQ(per_block.begin()->first, 0);
  EXPECT_EQ(per_block.rbegin()->first, g.n_layer - 1);
}

TEST(L03_ParameterNames, BlocksPastNineAndTheHeadAndTheTiedWeight) {
  EXPECT_EQ(nn::parameter_place("transformer.h.11.mlp.c_proj.bias"), (nn::ParameterPlace{ModelPart::block, 11}));
  EXPECT_EQ(nn::parameter_place("lm_head.weight"), (nn::ParameterPlace{ModelPart::head, -1}));
  EXPECT_TRUE(nn::is_tied_embedding("transformer.wte.weight"));
  EXPECT_FALSE(nn::is_tied_embedding("transformer.wpe.weight"));
}

TEST(L03_ParameterNames, ANameThatIsNotTheGptsIsOneClearError) {
  for (const char* bad : {"encoder.weight", "transformer.h.x.attn.c_attn.weight", "transformer.h.3", "transformer.h..ln_1.weight",
                          "transformer.h.-1.ln_1.weight", "transformer.wte", ""}) {
    SCOPED_TRACE(bad);
    try {
      nn::parameter_place(bad);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("is not one of the GPT's"), std::string::npos) << e.what();
    }
  }
}

TEST(L03_ParameterNames, AModuleNamesABlockOnlyAsTheBlockItself) {
  EXPECT_EQ(nn::block_of_module("transformer.h.0"), 0);
  EXPECT_EQ(nn::block_of_module("transformer.h.11"), 11);
  for (const char* other : {"transformer.h.3.attn", "transformer.h.3.mlp.c_fc", "transformer.h.", "transformer.h.x",
                            "transformer.h.-1", "transformer.wte", "transformer.ln_f", "lm_head", "transformer", ""}) {
    EXPECT_EQ(nn::block_of_module(other), -1) << other;
  }
}
