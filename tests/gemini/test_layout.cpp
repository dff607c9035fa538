// Gemini's layout of a real GPT's parameters (gemini/layout.h): the order of use, the chunks of chunk_config_dict
// or the search, and the static placement of shard_param_frac and offload_param_frac by chunk memory.
#include <gtest/gtest.h>

#include "gemini/layout.h"
#include "nn/gpt.h"

using namespace minitorch;

namespace {

nn::NamedTensors baby_parameters() {
  Generator gen(1);
  static nn::GPT model(nn::GPTConfig{.block_size = 16, .vocab_size = 65, .n_layer = 2, .n_head = 2, .n_embd = 24}, gen);
  return model.named_parameters();
}

gemini::GeminiConfig chunks_of(std::int64_t size, int dp) {
  gemini::GeminiConfig c;
  c.enabled = true;
  c.chunk_config_dict[dp] = {size, false};
  return c;
}

}  // namespace

TEST(L12_GeminiLayout, OuterTensorsFirstThenBlocksChunksOfTheGivenSize) {
  const nn::NamedTensors params = baby_parameters();
  const gemini::GeminiLayout l = gemini::plan_gemini(params, 2, chunks_of(2400, 2));
  ASSERT_EQ(l.order.size(), params.size());
  EXPECT_EQ(params[l.order[0]].first, "transformer.wte.weight");
  EXPECT_EQ(params[l.order[1]].first, "transformer.wpe.weight");
  EXPECT_TRUE(params[l.order[2]].first.starts_with("transformer.ln_f.")) << "the outer tensors first";
  EXPECT_TRUE(params[l.order[4]].first.starts_with("transformer.h.0.")) << params[l.order[4]].first;
  EXPECT_TRUE(l.from_dict);
  std::int64_t used = 0, total = 0;
  for (std::size_t c = 0; c < l.size(); ++c) {
    EXPECT_EQ(l.chunks.chunks[c].size, 2400);
    EXPECT_LE(l.chunks.chunks[c].used(), 2400);
    EXPECT_EQ(l.allocated[c], 2400);
    EXPECT_FALSE(l.keep_gathered[c]);
    EXPECT_FALSE(l.param_on_host[c]);
    used += l.chunks.chunks[c].used();
  }
  for (const auto& [name, t] : params) total += t.numel();
  EXPECT_EQ(used, total);
  EXPECT_EQ(l.chunks.waste(), 2400 * static_cast<std::int64_t>(l.size()) - total);
  EXPECT_THROW(gemini::plan_gemini(params, 4, chunks_of(2400, 2)), std::invalid_argument) << "no entry for 4 ranks";
  // Colossal-AI's default minimum (32 × 2^20 elements) makes the baby GPT one chunk kept gathered.
  gemini::GeminiConfig defaults;
  const gemini::GeminiLayout one = gemini::plan_gemini(params, 2, defaults);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one.keep_gathered[0]);
  EXPECT_EQ(one.allocated[0] % 2, 0) << "rounded up to split into 2 shards";
}

TEST(L12_GeminiLayout, StaticFractionsPlaceChunksByMemoryInOrderOfUse) {
  const nn::NamedTensors params = baby_parameters();
  gemini::GeminiConfig c = chunks_of(2400, 2);
  c.shard_param_frac = 0.5;
  gemini::GeminiLayout l = gemini::plan_gemini(params, 2, c);
  const std::int64_t n = static_cast<std::int64_t>(l.size());
  // (1 − 0.5) of n chunks of equal size: the first ⌊n/2⌋ kept gathered, the rest sharded.
  for (std::int64_t k = 0; k < n; ++k) EXPECT_EQ(l.keep_gathered[k], k < n / 2) << "chunk " << k;
  EXPECT_EQ(l.sharded(), static_cast<std::size_t>(n - n / 2));
  c = chunks_of(2400, 2);
  c.offload_optim_frac = 1.0;
  c.offload_param_frac = 0.25;
  l = gemini::plan_gemini(params, 2, c);
  // The first (1 − 0.25) of the memory stays on the device: chunk k (k + 1 chunks so far) is on the host when
  // k + 1 > 0.75 n.
  for (std::int64_t k = 0; k < n; ++k)
    EXPECT_EQ(l.param_on_host[k], static_cast<double>(k + 1) > 0.75 * static_cast<double>(n)) << "chunk " << k;
  EXPECT_TRUE(l.optim_on_host);
  c.offload_param_frac = 1.0;
  EXPECT_EQ(gemini::plan_gemini(params, 2, c).on_host(), l.size());
}
