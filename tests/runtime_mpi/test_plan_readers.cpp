// Every reader of the run's plan (runtime/plan.h) sees the same one: the strategy make_strategy built, the
// out-of-memory explanation, the run report, the step trace's frames and the choice of save all say the
// stage, the offload and the kind of save that make_plan decided — on N ranks and on a group of one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dist/process_group.h"
#include "runtime/plan.h"
#include "runtime/report.h"
#include "runtime/step_trace.h"
#include "train_util.h"

using namespace minitorch;

namespace {
std::string config_json(int stage, bool offload) {
  return R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
    "zero_optimization": {"stage": )" + std::to_string(stage) + R"(, "reduce_bucket_size": 3000)" +
         (offload ? R"(, "offload_optimizer": {"device": "cpu"})" : "") + R"(},
    "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16},
    "training": {"steps": 1, "seed": 5}})";
}

/// What each reader of `run`'s engine says, against the plan made from its config on its device.
void expect_readers_agree(const mt_test::TrainRun& run, dist::ProcessGroup* group, const runtime::Plan& expected) {
  const runtime::Engine& e = *run.engine;
  EXPECT_EQ(e.plan().zero_stage, expected.zero_stage);
  EXPECT_EQ(e.plan().save_kind, expected.save_kind);
  EXPECT_EQ(e.plan().device, expected.device);
  EXPECT_EQ(e.strategy().zero_stage(), expected.zero_stage) << "make_strategy built the plan's stage";
  EXPECT_EQ(e.strategy().shards_optimizer_state(), expected.sharded_save()) << "the save holds what the strategy holds";
  EXPECT_EQ(e.memory_run().zero_stage, expected.zero_stage) << "the out-of-memory explanation";
  EXPECT_EQ(e.memory_run().offload, expected.offload_optimizer);
  const runtime::RunReport report(e, group);
  const nlohmann::ordered_json j = report.to_json({});
  EXPECT_EQ(j["zero_stage"], expected.zero_stage) << "the run report";
  EXPECT_EQ(j["config_zero_stage"], expected.config_zero_stage);
  EXPECT_EQ(j["data_parallel_size"], expected.grid.data);
  EXPECT_EQ(runtime::frames_run(e, expected.grid.world)["zero_stage"], expected.zero_stage) << "the step trace";
  EXPECT_EQ(e.warnings(), expected.warnings) << "one set of warnings, printed once";
}
}  // namespace

TEST(L06_PlanReaders, EveryStageOnEveryRankReadsOnePlan) {
  auto& world = dist::world();
  for (int stage : {0, 1, 2, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage) + " on " + std::to_string(world.size()) + " ranks");
    const mt_test::TrainRun run(config_json(stage, false), &world);
    const runtime::Plan expected = runtime::make_plan(run.cfg);
    EXPECT_EQ(expected.zero_stage, stage);
    expect_readers_agree(run, &world, expected);
  }
}

TEST(L06_PlanReaders, OneRankRunsStageZeroWhereverTheRuleIsRead) {
  auto alone = dist::world().split(dist::world().rank(), 0);  // every rank a group of its own
  const mt_test::TrainRun run(config_json(2, false), alone.get());
  const runtime::Plan expected = runtime::make_plan(run.cfg);
  EXPECT_EQ(expected.zero_stage, 0);
  ASSERT_EQ(expected.warnings.size(), 1u);
  expect_readers_agree(run, alone.get(), expected);
}

TEST(L10_PlanReaders, OffloadOnOneRankRunsTheStageWhereverTheRuleIsRead) {
  auto alone = dist::world().split(dist::world().rank(), 0);
  const mt_test::TrainRun run(config_json(2, true), alone.get(), std::nullopt, Device::sim());
  const runtime::Plan expected =
      runtime::make_plan(run.cfg, {.device = "sim", .device_memory = std::nullopt});
  EXPECT_EQ(expected.zero_stage, 2);
  EXPECT_TRUE(expected.warnings.empty());
  expect_readers_agree(run, alone.get(), expected);
}
