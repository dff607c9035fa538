// L09 — a GPT split into pipeline stages (pipeline/partition.h): uniform and parameter-balanced splits,
// the embeddings first, the head (with its tied weight) last, and bad requests as one clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <vector>
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

// The smallest possible largest stage over every split of blocks [first, L) into `stages` non-empty
// groups, the embeddings on stage 0 (when first = 0) and the head on the last: brute force.
static std::int64_t best_largest(const std::vector<std::int64_t>& w, int first, int L, int stages) {
  std::int64_t blocks = 0, best = INT64_MAX;
  for (int end = first + 1; end <= L - stages + 1; ++end) {
    blocks += w[end];  // block end-1
    std::int64_t stage = blocks + (first == 0 ? w.front() : 0);
    if (stages == 1) {
      if (end < L) continue;
      return stage + w.back();
    }
    best = std::min(best, std::max(stage, best_largest(w, end, L, stages - 1)));
  }
  return best;
}

// L09.2 (lab task: the "parameters" partition). Splitting by block counts, or filling each stage up to
// the average and moving on (greedy), leaves a larger largest stage on at least one of these.
TEST(L09_T2_Partition, ParametersMethodMinimisesTheLargestStage) {
  GPTConfig six = baby();
  six.n_layer = 6;
  for (const GPTConfig& c : {GPTConfig::named("gpt2"), six})
    for (int P = 1; P <= 4; ++P) {
      SCOPED_TRACE("n_layer " + std::to_string(c.n_layer) + ", " + std::to_string(P) + " stages");
      const auto plan = pp::partition_gpt(c, P, "parameters");
      ASSERT_EQ(static_cast<int>(plan.size()), P);
      const auto w = pp::layer_parameters(c);
      std::int64_t largest = 0;
      for (const auto& p : plan) largest = std::max(largest, p.parameters);
      const int L = static_cast<int>(c.n_layer);
      EXPECT_EQ(largest, best_largest(w, 0, L, P)) << "L = " << L << ", P = " << P;
      EXPECT_EQ(plan.front().first_block, 0);
      for (int s = 0; s < P; ++s) {
        EXPECT_LT(plan[s].first_block, plan[s].end_block) << "stage " << s << " has no block";
        if (s > 0) {
          EXPECT_EQ(plan[s].first_block, plan[s - 1].end_block);
        }
        EXPECT_EQ(plan[s].embeddings, s == 0);
        EXPECT_EQ(plan[s].head, s == P - 1);
      }
      EXPECT_EQ(plan.back().end_block, L);
    }
}

TEST(L09_T2_Partition, GPT2sEmbeddingStageTakesFewerBlocks) {
  // GPT-2's shape: the 38.6M-element embedding is three blocks' worth, so the first stage takes fewer blocks.
  const auto plan = pp::partition_gpt(GPTConfig::named("gpt2"), 4, "parameters");
  EXPECT_LT(plan[0].end_block - plan[0].first_block, plan[1].end_block - plan[1].first_block)
      << "the embedding's stage holds fewer blocks";
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
