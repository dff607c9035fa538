// The ZeRO paper's formulas as code: Table 1 (7.5B parameters, N = 64, mixed precision) comes out of
// runtime/formulas.h, and the communication volumes follow docs/design.md §8's per-stage rules.
#include <gtest/gtest.h>

#include "test_util.h"
#include "runtime/formulas.h"

using namespace minitorch::runtime;

TEST(L06_Formulas, ZeroPaperTable1For7Point5BOn64Ranks) {
  const BytesPerParameter b = bytes_per_parameter(/*bf16=*/true);
  EXPECT_EQ(b.P, 2);
  EXPECT_EQ(b.G, 2);
  EXPECT_EQ(b.K, 12);
  auto gb = [&](int stage) { return model_state_bytes(stage, 7.5e9, 64, b).total() / 1e9; };
  EXPECT_DOUBLE_EQ(gb(0), 120.0);
  EXPECT_NEAR(gb(1), 31.4, 0.05);
  EXPECT_NEAR(gb(2), 16.6, 0.05);
  EXPECT_NEAR(gb(3), 1.88, 0.005);
  EXPECT_DOUBLE_EQ(model_state_bytes(3, 7.5e9, 64, b).total(), 16 * 7.5e9 / 64);
}

TEST(L06_Formulas, Fp32IsFourFourEightAndOneRankKeepsEverything) {
  const BytesPerParameter b = bytes_per_parameter(false);
  EXPECT_EQ(b.P + b.G + b.K, 16);
  for (int stage = 0; stage <= 3; ++stage)
    EXPECT_DOUBLE_EQ(model_state_bytes(stage, 1000, 1, b).total(), 16000) << "stage " << stage;
  EXPECT_DOUBLE_EQ(model_state_bytes(1, 1000, 4, b).optim, 2000);
  EXPECT_DOUBLE_EQ(model_state_bytes(2, 1000, 4, b).grad, 1000);
  EXPECT_DOUBLE_EQ(model_state_bytes(2, 1000, 4, b).param, 4000);
}

TEST(L06_Formulas, CommunicationPerStepWithAccumulation) {
  // N = 4, Ψ = 1000, G = 3 micro-steps: (N−1)/N·Ψ = 750 per reduce-scatter or all-gather.
  EXPECT_DOUBLE_EQ(comm_elements_per_step(0, 1000, 4, 3), 1500);      // all-reduce at the boundary
  EXPECT_DOUBLE_EQ(comm_elements_per_step(1, 1000, 4, 3), 1500);      // reduce-scatter + all-gather
  EXPECT_DOUBLE_EQ(comm_elements_per_step(2, 1000, 4, 3), 4 * 750);   // (A+1)(N−1)/N·Ψ
  EXPECT_DOUBLE_EQ(comm_elements_per_step(3, 1000, 4, 3), 9 * 750);   // 3A(N−1)/N·Ψ
  EXPECT_DOUBLE_EQ(comm_elements_per_step(3, 1000, 4, 1), 1.5 * comm_elements_per_step(0, 1000, 4, 1));  // ZeRO-3 = 1.5× DDP
  EXPECT_DOUBLE_EQ(comm_elements_per_step(0, 1000, 1, 1), 0);
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([] { comm_elements_per_step(4, 1, 2, 1); }), "stage"));
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([] { model_state_bytes(0, 1, 0, {}); }), "world"));
}

TEST(L11_Formulas, ReductionBufferBytesIsTheConstantBufferBound) {
  // c = ⌊1000/4⌋ = 250: two reductions of (4 + 1)·250 elements, 4 bytes each (f32), 2 + 4 (bf16 through f32).
  EXPECT_EQ(reduction_buffer_bytes(1000, 4, 4), 2 * 4 * 5 * 250);
  EXPECT_EQ(reduction_buffer_bytes(1000, 4, 2), 2 * 6 * 5 * 250);
  EXPECT_EQ(reduction_buffer_bytes(1001, 2, 4, 1), 4 * 3 * 500);
  EXPECT_EQ(reduction_buffer_bytes(3, 8, 4), 2 * 4 * 9 * 1) << "at least one element per rank";
  EXPECT_THROW(reduction_buffer_bytes(0, 2, 4), std::invalid_argument);
}
