// zero_optimization.sub_group_size (zero/tiled_step.h), run under `mpirun -np 2` and `-np 4`: at
// ZeRO-3 the optimizer step walks this rank's shard in tiles of at most sub_group_size elements, so
// its temporary memory (MemTag::optim_temp: one f32 gradient tile) peaks at 4·min(sub_group_size,
// shard elements) bytes, to the byte, and the training is the same whatever the tile.
#include <gtest/gtest.h>

#include <algorithm>

#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "runtime/engine.h"
#include "zero/stage3.h"
#include "zero_test_util.h"

using namespace minitorch;
using namespace zero_test;

namespace {
std::string zero3_tiled(std::int64_t sub_group_size, bool bf16 = false) {
  return config_json(3, 2, 2, bf16, 2500,
                     R"(, "stage3_param_persistence_threshold": 0, "sub_group_size": )" + std::to_string(sub_group_size));
}

/// Σ elements of this rank's pieces: what its optimizer updates.
std::int64_t shard_elements(const ZeroRun& run) {
  std::int64_t mine = 0;
  const auto* s3 = run.engine->strategy_as<zero::Stage3>();
  if (!s3) throw std::runtime_error(zero_test::kNeedsTwoRanks);
  for (const zero::ShardPiece& p : s3->partition().pieces()) mine += p.range.size();
  return mine;
}
}  // namespace

TEST(L07_SubGroupSize, TilesSmallerThanTheShardTrainTheSame) {
  auto& world = dist::world();
  for (bool bf16 : {false, true}) {
    ZeroRun tiled(zero3_tiled(1000, bf16), &world, 11), whole(zero3_tiled(1'000'000'000, bf16), &world, 11);
    ASSERT_LT(1000, shard_elements(tiled)) << "the test needs several tiles per shard";
    for (int s = 0; s < 10; ++s) {
      const float a = tiled.engine->train_batch(*tiled.sampler), b = whole.engine->train_batch(*whole.sampler);
      EXPECT_NEAR(a, b, 1e-6 * std::abs(b)) << "step " << s << (bf16 ? " bf16" : " f32");
    }
  }
}

TEST(L07_SubGroupSize, TheOptimizersTemporaryPeakIsOneTileToTheByte) {
  auto& world = dist::world();
  for (bool bf16 : {false, true})
    for (std::int64_t sgs : {std::int64_t{1000}, std::int64_t{1'000'000'000}}) {
      ZeroRun run(zero3_tiled(sgs, bf16), &world, 11);
      reset_peak_memory();
      run.train(2);
      const std::int64_t mine = shard_elements(run);
      // One f32 tile at a time, whatever the parameters' dtype: 4 · min(sub_group_size, shard) bytes.
      EXPECT_EQ(memory_stats().peak(MemTag::optim_temp), 4 * std::min(sgs, mine))
          << "sub_group_size " << sgs << ", shard " << mine << (bf16 ? " bf16" : " f32");
      EXPECT_EQ(memory_stats().current(MemTag::optim_temp), 0) << "a tile outlived the step";
    }
}

TEST(L07_SubGroupSize, BelowStage3TheShardIsOneTileAndTheKeyWarns) {
  auto& world = dist::world();
  ZeroRun run(config_json(2, 2, 1, false, 2500, R"(, "sub_group_size": 1000)"), &world, 11);
  ASSERT_EQ(run.cfg.warnings.size(), 1u);
  EXPECT_NE(run.cfg.warnings[0].find("sub_group_size only affects ZeRO stage 3"), std::string::npos) << run.cfg.warnings[0];
  reset_peak_memory();
  run.train(1);
  std::int64_t mine = 0;
  for (const auto& g : run.engine->optimizer().param_groups())
    for (const auto& [name, t] : g.params) mine += t.numel();
  EXPECT_EQ(memory_stats().peak(MemTag::optim_temp), 4 * mine);
}
