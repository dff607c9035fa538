// fp16 with DeepSpeed's loss scaler (runtime/loss_scaler.h) on N ranks, under `mpirun -np 2` and `-np 4`:
// stages 0-3 train like one rank with N-fold accumulation (to the precision the bf16 tests use), the
// overflow decision is the same on every rank (one all-reduced norm), and the model states of
// ZeRO-3 in fp16 are bf16's (2 + 2 + 12)·Ψ/N, to the byte.
#include <gtest/gtest.h>

#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "runtime/engine.h"
#include "zero/stage3.h"
#include "zero_mpi/zero_test_util.h"

using namespace minitorch;
using namespace zero_test;

namespace {

const std::string kShardAll = R"(, "stage3_param_persistence_threshold": 0)";

/// Stage `stage` in fp16 on N ranks against one rank accumulating N times as many micro-batches:
/// losses and final parameters within `tol` over 20 steps, and the same loss scale.
void expect_fp16_equivalent(int stage, int accum) {
  auto& world = dist::world();
  const int N = world.size();
  // f16 rounds every update into the parameters, like bf16 with 3 more mantissa bits: bf16's tolerance.
  const double tol = 2e-2;
  ZeroRun run(with_fp16(config_json(stage, 2, accum, false, 2500, stage == 3 ? kShardAll : "")), &world,
              11 + 1000 * static_cast<std::uint64_t>(world.rank()));  // stage must broadcast rank 0's weights
  ZeroRun ref(with_fp16(config_json(0, 2, accum * N)), nullptr, 11);
  for (int s = 0; s < 20; ++s) {
    const float a = run.engine->train_batch(*run.sampler), b = ref.engine->train_batch(*ref.sampler);
    EXPECT_LT(std::abs(a - b) / std::abs(b), tol) << "step " << s << ": N ranks " << a << " vs 1 rank " << b;
  }
  EXPECT_EQ(run.engine->loss_scale(), ref.engine->loss_scale());
  EXPECT_EQ(run.engine->skipped_steps(), ref.engine->skipped_steps());
  auto* s3 = const_cast<zero::Stage3*>(run.engine->strategy_as<zero::Stage3>());
  if (s3) s3->gather_all();  // ZeRO-3: a consolidated view of the parameters
  EXPECT_LT(rel_norm(run.params(), ref.params()), tol) << "parameters after 20 steps, rank " << world.rank();
  if (s3) s3->release_all();
}
}  // namespace

TEST(L06_Fp16, DdpNRanksEqualOneRank) { expect_fp16_equivalent(0, 1); }
TEST(L06_Fp16, Zero1NRanksEqualOneRank) { expect_fp16_equivalent(1, 1); }
TEST(L06_Fp16, Zero2NRanksWithAccumulationEqualOneRank) { expect_fp16_equivalent(2, 2); }
TEST(L06_Fp16, Zero3NRanksEqualOneRank) { expect_fp16_equivalent(3, 1); }

TEST(L06_Fp16, EveryRankSkipsTheSameOverflowStepsThenTrains) {
  auto& world = dist::world();
  for (int stage : {0, 2, 3}) {
    ZeroRun run(with_fp16(config_json(stage, 2, 1, false, 2500, stage == 3 ? kShardAll : ""),
                          R"(, "initial_scale_power": 30, "hysteresis": 1)"),
                &world, 11);
    const std::vector<float> losses = run.train(30);
    const std::int64_t skipped = run.engine->skipped_steps();
    EXPECT_GT(skipped, 0) << "stage " << stage << ": 2^30 overflows f16";
    const std::vector<float> counts = world.all_gather(Tensor::full({1}, static_cast<float>(skipped)), world.size()).to_vector();
    for (float c : counts) EXPECT_EQ(c, static_cast<float>(skipped)) << "stage " << stage << ": ranks skipped differently";
    EXPECT_EQ(run.engine->loss_scale(), std::ldexp(1.0, 30 - static_cast<int>(skipped)));
    EXPECT_EQ(run.engine->optimizer().step_count(), 30 - skipped);
    EXPECT_LT(losses.back(), losses[static_cast<std::size_t>(skipped)]) << "stage " << stage;
  }
}

TEST(L06_Fp16, Zero3ModelStatesAreBf16sToTheByte) {
  auto& world = dist::world();
  ZeroRun run(with_fp16(config_json(3, 2, 2, false, 2500, kShardAll)), &world, 11);
  run.train(2);
  ASSERT_EQ(run.engine->skipped_steps(), 0);
  const auto* s3 = run.engine->strategy_as<zero::Stage3>();
  const zero::Partition& part = s3->partition();
  const std::int64_t N = world.size(), flat = run.psi() + part.padding();
  std::int64_t mine = 0;
  for (const zero::ShardPiece& p : part.pieces()) mine += p.range.size();
  const zero::ModelStateBytes& measured = run.engine->measured_model_states();
  EXPECT_EQ(measured.param, 2 * flat / N);
  EXPECT_EQ(measured.grad, 2 * flat / N);
  EXPECT_EQ(measured.optim, 12 * mine);
}
