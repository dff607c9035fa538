// ZeRO-2 (zero/stage2.h), run under `mpirun -np 2` and `-np 4`: N ranks give the losses and the
// parameters of one rank with N-fold accumulation, with and without overlap_comm; each rank holds
// P·(Ψ + padding) + G·(Ψ + padding)/N + K·(its shard) bytes of model states, to the byte, and no full
// gradient at the step; each micro-step reduce-scatters Ψ + padding, each step all-gathers it once.
#include <gtest/gtest.h>

#include <map>

#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "test_util.h"
#include "runtime/engine.h"
#include "zero/stage2.h"
#include "zero_test_util.h"

using namespace minitorch;
using namespace zero_test;

namespace {
std::string overlap(bool on) { return std::string(R"(, "overlap_comm": )") + (on ? "true" : "false"); }

void expect_equivalent(int accum, bool bf16, bool overlap_comm, double tol) {
  const int N = dist::world().size();
  zero_test::expect_equivalent(config_json(2, 2, accum, bf16, 2500, overlap(overlap_comm)),
                               config_json(0, 2, accum * N, bf16), tol);
}
}  // namespace

TEST(L06_Zero2, NRanksEqualOneRankOver20Steps) { expect_equivalent(1, false, true, 1e-5); }

TEST(L06_Zero2, NRanksWithAccumulationEqualOneRankOver20Steps) { expect_equivalent(2, false, true, 1e-5); }

TEST(L06_Zero2, WithoutOverlapTheSameTraining) { expect_equivalent(2, false, false, 1e-5); }

TEST(L06_Zero2, Bf16NRanksEqualOneRankWithinBf16Precision) { expect_equivalent(1, true, true, 2e-2); }

// The reduced gradients themselves (clipping and AdamW would hide a sum instead of a mean): after
// two micro-steps, this rank's shard holds the 1-rank gradient of the global batch.
TEST(L06_T4_Zero2, ReducedShardIsTheOneRankGradientOfTheGlobalBatch) {
  auto& world = dist::world();
  const int N = world.size(), G = 2;
  ZeroRun run(config_json(2, 2, G, false, 2500, overlap(true)), &world, 11);
  ZeroRun ref(config_json(0, 2, G * N), nullptr, 11);
  for (int m = 0; m < G * N; ++m) {
    data::Batch b = ref.sampler->sample(0, 0, 1, m, G * N);
    ref.engine->backward(ref.engine->forward(b.x, b.y));
    if (m + 1 < G * N) ref.engine->step();
  }
  for (int m = 0; m < G; ++m) {
    data::Batch b = run.sampler->sample(world.rank(), 0, N, m, G);
    run.engine->backward(run.engine->forward(b.x, b.y));
    if (m + 1 < G) run.engine->step();
  }
  run.engine->strategy().reduce_gradients();
  const auto* s2 = run.engine->strategy_as<zero::Stage2>();
  for (const auto& [name, p] : run.engine->model().named_parameters())
    EXPECT_FALSE(p.grad().defined()) << name << ": a full gradient outlived its reduction";
  EXPECT_LT(shard_gradient_error(s2->partition(), s2->optimizer(), ref.engine->model()), 1e-5) << "rank " << world.rank();
}

namespace {
void expect_model_states_to_the_byte(bool bf16, bool contiguous) {
  auto& world = dist::world();
  const std::int64_t N = world.size();
  ZeroRun run(config_json(2, 2, 2, bf16, 2500,
                          overlap(true) + R"(, "contiguous_gradients": )" + (contiguous ? "true" : "false")),
              &world, 11);
  ASSERT_EQ(memory_stats().current(MemTag::comm), 0);
  reset_peak_memory();  // the peak from here on is this run's
  run.train(2);
  const auto* s2 = run.engine->strategy_as<zero::Stage2>();
  const zero::Partition& part = s2->partition();
  const std::int64_t psi = run.psi(), pad = part.padding();
  std::int64_t mine = 0, biggest = 0;
  for (const zero::ShardPiece& p : part.pieces()) mine += p.range.size();
  for (const zero::ShardedBucket& b : part.buckets()) biggest = std::max(biggest, b.numel);
  const std::int64_t P = bf16 ? 2 : 4, G = P, K = bf16 ? 12 : 8;
  // docs/design.md §8: P·Ψ + (G + K)·Ψ/N, plus the padding of the flat buffers.
  const zero::ModelStateBytes want{P * (psi + pad), G * (psi + pad) / N, K * mine};
  const zero::ModelStateBytes& measured = run.engine->measured_model_states();
  EXPECT_EQ(measured.param, want.param) << "Ψ = " << psi << ", padding " << pad;
  EXPECT_EQ(measured.grad, want.grad) << "only this rank's shard of the gradients";
  EXPECT_EQ(measured.optim, want.optim);
  const zero::ModelStateBytes counted = s2->model_state_bytes();
  EXPECT_EQ(counted.param, want.param);
  EXPECT_EQ(counted.grad, want.grad);
  EXPECT_EQ(counted.optim, want.optim);
  // The communication buffers: at most two buckets in flight, each its flat copy and 1/N result (and
  // in bf16 the f32 copies the reduction sums in).
  const std::int64_t per_bucket = P * biggest + P * biggest / N + (bf16 ? 4 * biggest + 4 * biggest / N : 0);
  EXPECT_LE(memory_stats().peak(MemTag::comm), 2 * per_bucket);
  EXPECT_GE(memory_stats().peak(MemTag::comm), P * biggest) << "a bucket's flat copy was never allocated?";
  EXPECT_EQ(memory_stats().current(MemTag::comm), 0) << "the comm buffers outlived the step";
}
}  // namespace

TEST(L06_T4_Zero2, ModelStatesPerRankAreTheFormulaToTheByteInFp32) { expect_model_states_to_the_byte(false, true); }

TEST(L06_Zero2, ModelStatesPerRankAreTheFormulaToTheByteInBf16) { expect_model_states_to_the_byte(true, true); }

TEST(L06_Zero2, NonContiguousGradientShardsTakeTheSameBytes) { expect_model_states_to_the_byte(false, false); }

TEST(L06_T4_Zero2, EveryMicroStepReduceScattersAndEachStepGathersOnce) {
  auto& world = dist::world();
  const std::int64_t N = world.size();
  for (int accum : {1, 3}) {
    ZeroRun run(config_json(2, 2, accum, false, 2500, overlap(true)), &world, 11);
    const zero::Partition& part = run.engine->strategy_as<zero::Stage2>()->partition();
    const std::int64_t flat = run.psi() + part.padding(), buckets = static_cast<std::int64_t>(part.buckets().size());
    for (int s = 0; s < 2; ++s) {
      auto per_op = traffic_of_one_step(run);  // op -> (calls, elements)
      SCOPED_TRACE("accumulation " + std::to_string(accum) + ", step " + std::to_string(s));
      // docs/design.md §8: (G + 1)·(N−1)/N·Ψ elements per step.
      EXPECT_EQ(per_op["reduce_scatter"], std::make_pair(accum * buckets, accum * (N - 1) * flat / N));
      EXPECT_EQ(per_op["all_gather"], std::make_pair(buckets, (N - 1) * flat / N));
      EXPECT_EQ(per_op["all_reduce"].first, 1) << "the global norm: one scalar";
      EXPECT_EQ(per_op.size(), 3u);
    }
  }
}

TEST(L06_Zero2, OverlapCommLaunchesEveryBucketInsideBackward) {
  auto& world = dist::world();
  for (bool on : {false, true}) {
    ZeroRun run(config_json(2, 2, 1, false, 2500, overlap(on)), &world, 11);
    run.train(1);
    const auto* s2 = run.engine->strategy_as<zero::Stage2>();
    EXPECT_EQ(s2->reducer().launched_in_backward(), on ? static_cast<int>(s2->partition().buckets().size()) : 0);
  }
}
