// Sharded checkpoints as a user runs them: mpirun minitorch-train --out DIR at stage >= 1, then
// --resume DIR on another number of ranks (4 -> 2, 4 -> 1, 2 -> 4), each continuing with the losses of
// the run that was never interrupted; minitorch-consolidate's file evaluates and samples. The runs train
// the shipped configs' settings on a tiny model (mt_test::tiny_model_copy).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "test_util.h"

using mt_test::run_command;
using testing::HasSubstr;

namespace {

/// The per-step losses a run report holds.
std::vector<double> losses_of(const std::string& report) {
  std::vector<double> out;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(report));  // kept: the loop reads into it
  for (const auto& s : j["steps"]) out.push_back(s["loss"].get<double>());
  return out;
}

/// minitorch-train on `np` ranks with the config file `config`, up to step `steps`; extra flags after.
mt_test::CommandResult train(int np, const std::string& config, const std::string& data, int steps,
                             const std::string& extra) {
  return run_command(mt_test::mpirun_command("minitorch-train", np,
                                             "--config " + config + " --data " + data + " --steps " +
                                                 std::to_string(steps) + " " + extra));
}
/// 4 steps of `config` on `np` ranks uninterrupted, and 2 steps saved at `ckpt` then resumed to step 4 on the
/// same ranks: steps 3 and 4 of both must be equal to the bit. `before_resume` may change the save first.
/// Returns the saving run's output.
std::string expect_resume_bit_identical(int np, const std::string& config, const std::string& data,
                                        const mt_test::TempDir& dir, const std::string& ckpt,
                                        const std::function<void()>& before_resume = {}) {
  auto r = train(np, config, data, 4, "--out '' --report " + dir.path("whole.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto saved = train(np, config, data, 2, "--out " + ckpt);
  EXPECT_EQ(saved.exit_code, 0) << saved.output;
  if (before_resume) before_resume();
  r = train(np, config, data, 4, "--resume " + ckpt + " --out '' --report " + dir.path("resumed.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::vector<double> a = losses_of(dir.path("whole.json")), b = losses_of(dir.path("resumed.json"));
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(b.size(), 2u);
  if (a.size() == 4 && b.size() == 2) {
    EXPECT_EQ(b[0], a[2]);
    EXPECT_EQ(b[1], a[3]);
  }
  return saved.output;
}
}  // namespace

TEST(L06_ShardedCheckpointCli, ResumeOnAnotherNumberOfRanksContinuesTheSameTraining) {
  mt_test::TempDir dir;
  const std::string data = mt_test::write_corpus(dir);
  struct Case {
    const char* config;
    int save_np, resume_np;
  };
  // The batch (32) is micro 8 x accumulation x ranks on any N: every run sees the same micro-batches.
  for (const Case& c : {Case{"configs/zero2.json", 4, 2}, Case{"configs/zero2.json", 4, 1}, Case{"configs/zero3.json", 2, 4}}) {
    const std::string tag = std::string(c.config).substr(8, 5) + "_" + std::to_string(c.save_np) + "to" +
                            std::to_string(c.resume_np);
    SCOPED_TRACE(tag);
    const std::string ckpt = dir.path(tag), whole = dir.path(tag + "_whole.json"), resumed = dir.path(tag + "_resumed.json");
    const std::string config = mt_test::tiny_model_copy(dir, c.config);
    auto r = train(c.save_np, config, data, 6, "--out '' --report " + whole);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = train(c.save_np, config, data, 3, "--out " + ckpt);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("saved " + ckpt + " (" + std::to_string(c.save_np) + " shards and a manifest)"));
    r = train(c.resume_np, config, data, 6, "--resume " + ckpt + " --out '' --report " + resumed);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("the data order changes among the ranks")) << "a warning, once";
    const std::vector<double> a = losses_of(whole), b = losses_of(resumed);
    ASSERT_EQ(a.size(), 6u);
    ASSERT_EQ(b.size(), 3u) << "steps 4..6";
    for (std::size_t s = 0; s < 3; ++s)
      EXPECT_NEAR(b[s], a[s + 3], 1e-5 * a[s + 3]) << "step " << s + 4 << ": re-partitioned, same training";
  }
}

TEST(L06_ShardedCheckpointCli, ResumeOnTheSameRanksIsBitIdenticalAndConsolidatedWeightsEvaluate) {
  mt_test::TempDir dir;
  const std::string data = mt_test::write_corpus(dir), ckpt = dir.path("ckpt"), model = dir.path("model.safetensors");
  const std::string config = mt_test::tiny_model_copy(dir, "configs/zero1.json");
  expect_resume_bit_identical(2, config, data, dir, ckpt);

  auto r = run_command(mt_test::bin("minitorch-consolidate") + " " + ckpt + " " + model);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("(stage 1, 2 shards, step 2) -> " + model));
  r = run_command(mt_test::bin("minitorch-eval") + " --checkpoint " + model + " --data " + data);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_command(mt_test::bin("minitorch-sample") + " --checkpoint " + model + " --tokens 5 --prompt In");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The directory itself is not a model file: one clear error that says what to do.
  r = run_command(mt_test::bin("minitorch-sample") + " --checkpoint " + ckpt + " --tokens 5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("is a sharded checkpoint (a directory of per-rank shards); put it together first: "
                                  "minitorch-consolidate"));
  r = run_command(mt_test::bin("minitorch-consolidate") + " " + model + " " + dir.path("x.safetensors"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("is not a sharded checkpoint directory (a single-file checkpoint is already whole"));
  EXPECT_FALSE(std::filesystem::exists(dir.path("x.safetensors")));
  // A save killed between its two renames leaves the new save complete at CKPT.partial and nothing at CKPT:
  // consolidation finds it and says so (runtime/save_target.h).
  std::filesystem::rename(ckpt, ckpt + ".partial");
  r = run_command(mt_test::bin("minitorch-consolidate") + " " + ckpt + " " + model);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("warning: '" + ckpt + "' is not a complete save (a save of it was interrupted); using '" +
                                  ckpt + ".partial', the complete new save beside it"));
  EXPECT_THAT(r.output, HasSubstr("consolidated " + ckpt + ".partial (stage 1, 2 shards, step 2)"));
}

// A pipeline run (configs/pipeline.json: 2 stages; on 4 ranks a 2 x 2 grid) saves one shard per rank,
// resumes bit-identically on its grid, and consolidates into one model file that minitorch-eval reads.
TEST(L09_PipelineCheckpointCli, SavesResumesBitIdenticallyAndConsolidates) {
  mt_test::TempDir dir;
  const std::string data = mt_test::write_corpus(dir), ckpt = dir.path("ckpt"), model = dir.path("model.safetensors");
  const std::string config = mt_test::tiny_model_copy(dir, "configs/pipeline.json", /*n_layer=*/2);
  EXPECT_THAT(expect_resume_bit_identical(4, config, data, dir, ckpt), HasSubstr("saved " + ckpt + " (4 shards and a manifest)"));
  auto r = run_command(mt_test::bin("minitorch-consolidate") + " " + ckpt + " " + model);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("(stage 0, 4 shards (2 data-parallel x 2 pipeline stages), step 2) -> " + model));
  r = run_command(mt_test::bin("minitorch-eval") + " --checkpoint " + model + " --data " + data);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// The manifest names the ZeRO stage `zero_stage`; a save from before that rename says `stage`, and resumes
// as it always did.
TEST(L06_ShardedCheckpointCli, AManifestThatSaysStageResumesLikeOneThatSaysZeroStage) {
  mt_test::TempDir dir;
  const std::string data = mt_test::write_corpus(dir), ckpt = dir.path("ckpt");
  const std::string config = mt_test::tiny_model_copy(dir, "configs/zero2.json");
  expect_resume_bit_identical(2, config, data, dir, ckpt, [&] {
    const std::string manifest = ckpt + "/manifest.json";
    nlohmann::json j = nlohmann::json::parse(std::ifstream(manifest));
    EXPECT_EQ(j.value("zero_stage", -1), 2);
    EXPECT_FALSE(j.contains("stage"));
    j["stage"] = j["zero_stage"];  // as a save from before the rename wrote it
    j.erase("zero_stage");
    std::ofstream(manifest) << j.dump(2) << "\n";
  });
}

TEST(L06_ShardedCheckpointCli, OutThatIsAFileIsRefusedBeforeTraining) {
  mt_test::TempDir dir;
  const std::string file = dir.write("taken", "not a checkpoint");
  auto r = train(2, mt_test::source("configs/zero2.json"), mt_test::write_corpus(dir), 2, "--out " + file);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("is a file (a single-file checkpoint?), but a sharded save"));
  EXPECT_THAT(r.output, testing::Not(HasSubstr("model GPTConfig"))) << "refused before the model is built";
}
