// The ZeRO configs as a user runs them (mpirun + minitorch-train): configs/zero{1,2,3}.json on 2 ranks,
// and the seeds' example DeepSpeed config unchanged on 4 ranks, each one real training run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"

using mt_test::run_command;
using testing::HasSubstr;

TEST(L06_ZeroConfigs, EachStageConfigTrainsOnTwoRanksAsItsStage) {
  mt_test::TempDir dir;
  const std::string data = mt_test::write_corpus(dir);
  for (int stage : {1, 2, 3}) {
    SCOPED_TRACE("configs/zero" + std::to_string(stage) + ".json");
    const std::string report = dir.path(std::to_string(stage) + "_report.json");
    auto r = run_command(mt_test::mpirun_command(
        "minitorch-train", 2,
        "--config " + mt_test::source("configs/zero" + std::to_string(stage) + ".json") + " --data " + data +
            " --steps 2 --report " + report + " --out " + dir.path("zero" + std::to_string(stage))));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("(2 shards and a manifest)")) << "a sharded checkpoint: a directory";
    EXPECT_THAT(r.output, HasSubstr("batch 32 = micro 8 x accumulation 2 x data ranks 2"));
    const nlohmann::json j = nlohmann::json::parse(std::ifstream(report));
    EXPECT_EQ(j["zero_stage"], stage);
    EXPECT_EQ(j["config_zero_stage"], stage);
    EXPECT_EQ(j["strategy"], "ZeRO-" + std::to_string(stage));
    EXPECT_EQ(j["steps"].size(), 2u);
    EXPECT_THAT(r.output, testing::Not(HasSubstr("single-rank training")));
  }
}

// On one rank a ZeRO stage's shard is the whole model: the run is single-rank training, and it says so.
TEST(L06_ZeroConfigs, AStageOnOneRankRunsAsSingleRankTrainingAndSaysSo) {
  mt_test::TempDir dir;
  const std::string report = dir.path("report.json");
  auto r = run_command(mt_test::mpirun_command(
      "minitorch-train", 1,
      "--config " + mt_test::source("configs/zero2.json") + " --data " + mt_test::write_corpus(dir) + " --steps 1 --report " + report));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("warning: zero_optimization.stage 2 on one data-parallel rank runs as single-rank "
                                  "training (stage 0)"));
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(j["zero_stage"], 0);
  EXPECT_EQ(j["config_zero_stage"], 2);
  EXPECT_EQ(j["strategy"], "single rank");
}

TEST(L06_ZeroConfigs, TheSeedsExampleConfigRunsUnchangedOnFourRanks) {
  mt_test::TempDir dir;
  // As given (the model and training sections default): bf16, stage 2 with overlap, bucket sizes in
  // elements written as floats, sub_group_size (a stage-3 key: a warning, not an error).
  const std::string config = dir.write(
      "seed.json",
      R"({"bf16": {"enabled": true},"zero_optimization": {"stage": 2,"overlap_comm": true,"contiguous_gradients": false,)"
      R"("reduce_bucket_size": 5e5,"sub_group_size": 5e5},"gradient_accumulation_steps": 4,)"
      R"("train_micro_batch_size_per_gpu": 1,"gradient_clipping": 1.0})");
  auto r = run_command(mt_test::mpirun_command("minitorch-train", 4, "--config " + config + " --data " + mt_test::write_corpus(dir) +
                                                                        " --steps 2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("warning: zero_optimization.sub_group_size only affects ZeRO stage 3"));
  EXPECT_THAT(r.output, HasSubstr("batch 16 = micro 1 x accumulation 4 x data ranks 4"));
  EXPECT_THAT(r.output, HasSubstr("bf16"));
  EXPECT_EQ(mt_test::error_lines(r.output), 0) << r.output;
}

TEST(L06_ZeroConfigs, TheFp16ConfigTrainsOnTwoRanksAndLogsItsLossScale) {
  mt_test::TempDir dir;
  const std::string report = dir.path("fp16_report.json");
  auto r = run_command(mt_test::mpirun_command(
      "minitorch-train", 2,
      "--config " + mt_test::source("configs/fp16.json") + " --data " + mt_test::write_corpus(dir) + " --steps 3 --report " + report));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("| fp16 (loss scaling)"));
  EXPECT_THAT(r.output, HasSubstr("| loss scale "));
  EXPECT_THAT(r.output, HasSubstr("| skipped "));
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(j["dtype"], "f16");
  EXPECT_EQ(j["zero_stage"], 3);
  EXPECT_TRUE(j["loss_scale"]["dynamic"].get<bool>());
  EXPECT_GE(j["loss_scale"]["skipped_steps"].get<int>(), 0);
  ASSERT_EQ(j["steps"].size(), 3u);
  EXPECT_TRUE(j["steps"][0].contains("skipped"));
  EXPECT_TRUE(j["ranks"][0]["memory"].contains("optim_temp"));
  EXPECT_EQ(mt_test::error_lines(r.output), 0) << r.output;
}
