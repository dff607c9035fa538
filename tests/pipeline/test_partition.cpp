// L09 — a GPT split into pipeline stages (pipeline/partition.h): uniform and parameter-balanced splits,
// the embeddings first, the head (with its tied weight) last, and bad requests as one clear error.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

#include "nn/gpt.h"
#include "pipeline/partition.h"

namespace pp = minitorch::pipeline;
using minitorch::nn::GPTConfig;

namespace {
GPTConfig baby() {
  GPTConfig c = GPTConfig::named("baby");
  c.vocab_size = 65;
  return c;
}
}  // namespace

TEST(L09_Partition, LayerParametersAddUpToTheModelPlusTheTiedCopy) {
  const GPTConfig c = baby();
  const auto w = pp::layer_parameters(c);
  std::int64_t psi = 0;
  for (const auto& [name, shape] : minitorch::nn::GPT::parameter_shapes(c)) psi += minitorch::shape_numel(shape);
  EXPECT_EQ(std::accumulate(w.begin(), w.end(), std::int64_t{0}), psi + 65 * 128);
  EXPECT_EQ(w[1], 12 * 128 * 128 + 13 * 128) << "a block: 12C² + 13C";
  EXPECT_EQ(w.front(), 65 * 128 + 64 * 128) << "wte + wpe";
  EXPECT_EQ(w.back(), 2 * 128 + 65 * 128) << "ln_f + the tied head weight";
}

TEST(L09_Partition, UniformSplitsBlocksEvenlyWithEndsAttached) {
  GPTConfig c = baby();
  c.n_layer = 6;
  const auto plan = pp::partition_gpt(c, 4, "uniform");
  ASSERT_EQ(plan.size(), 4u);
  const int first[] = {0, 2, 4, 5}, end[] = {2, 4, 5, 6};
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(plan[s].first_block, first[s]) << s;
    EXPECT_EQ(plan[s].end_block, end[s]) << s;
    EXPECT_EQ(plan[s].embeddings, s == 0);
    EXPECT_EQ(plan[s].head, s == 3);
  }
}

TEST(L09_Partition, ParametersMethodMinimisesTheLargestStage) {
  // GPT-2's shape: the 38.6M-element embedding is three blocks' worth, so the first stage takes fewer blocks.
  GPTConfig c = GPTConfig::named("gpt2");
  const auto plan = pp::partition_gpt(c, 4, "parameters");
  std::int64_t largest = 0;
  for (const auto& p : plan) largest = std::max(largest, p.parameters);
  // Brute force over every split into 4 non-empty groups of the 12 blocks.
  const auto w = pp::layer_parameters(c);
  std::int64_t best = INT64_MAX;
  for (int a = 1; a < 12; ++a)
    for (int b = a + 1; b < 12; ++b)
      for (int d = b + 1; d < 12; ++d) {
        auto sum = [&](int from, int to) { std::int64_t n = 0; for (int k = from; k < to; ++k) n += w[k + 1]; return n; };
        best = std::min(best, std::max({sum(0, a) + w.front(), sum(a, b), sum(b, d), sum(d, 12) + w.back()}));
      }
  EXPECT_EQ(largest, best);
  EXPECT_LT(plan[0].end_block - plan[0].first_block, plan[1].end_block - plan[1].first_block)
      << "the embedding's stage holds fewer blocks";
  for (std::size_t s = 1; s < plan.size(); ++s) EXPECT_EQ(plan[s].first_block, plan[s - 1].end_block);
  EXPECT_EQ(plan.back().end_block, 12);
}

TEST(L09_Partition, BadRequestsAreOneClearError) {
  try {
    pp::partition_gpt(baby(), 5, "uniform");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "pipeline: 5 stages for a GPT of 4 blocks (model.n_layer): every stage needs at least one "
                           "block, so 1 to 4 stages");
  }
  EXPECT_THROW(pp::partition_gpt(baby(), 0, "uniform"), std::invalid_argument);
  EXPECT_THROW(pp::partition_gpt(baby(), 2, "type:transformer"), std::invalid_argument);
}
