// Bad numbers, shapes and files given to the tools: one clear error line, the right exit status
// (2 for usage and configuration), no crash, and no checkpoint written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

using mt_test::bin;
using mt_test::run_command;
using testing::HasSubstr;

namespace {
const char* kModel = R"("n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16)";
std::string config(const std::string& model = kModel,
                   const std::string& training = R"("steps": 2, "eval_interval": 0, "log_interval": 1)",
                   const std::string& lr = "1e-3") {
  return R"({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4,
  "optimizer": {"type": "AdamW", "params": {"lr": )" + lr + R"(}},
  "model": {"name": "baby", )" + model + R"(}, "training": {"seed": 7, )" + training + "}}";
}

std::string corpus(const mt_test::TempDir& dir) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth.\n";
  return dir.write("corpus.txt", text);
}

std::string train(const mt_test::TempDir& dir, const std::string& cfg, const std::string& extra = "") {
  return bin("minitorch-train") + " --config " + dir.write("c.json", cfg) + " --data " + corpus(dir) + " " + extra;
}

void expect_error(const mt_test::CommandResult& r, int status, const std::string& needle) {
  EXPECT_EQ(r.exit_code, status) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(needle));
}
}  // namespace

TEST(L03_TrainCli, ZeroPeriodsAreConfigErrorsNotCrashes) {
  mt_test::TempDir dir;  // were SIGFPE (exit 136) and a nan validation loss
  expect_error(run_command(train(dir, config(kModel, R"("steps": 2, "log_interval": 0)"))), 2,
               "training.log_interval must be at least 1, got 0");
  std::string spp = config();
  spp.insert(1, R"("steps_per_print": 0, "wall_clock_breakdown": true, )");
  expect_error(run_command(train(dir, spp)), 2, "steps_per_print must be at least 1, got 0");
  expect_error(run_command(train(dir, config(kModel, R"("steps": 2, "eval_interval": 1, "eval_iters": 0)"))), 2,
               "training.eval_iters must be at least 1, got 0");
}

TEST(L03_TrainCli, HugeModelIsRefusedAtOnceWithTheFigure) {
  mt_test::TempDir dir;
  auto r = run_command(train(dir, config(R"("n_layer": 1000000)"), "--out " + dir.path("m.safetensors")));
  expect_error(r, 2, "it needs 3.2 TB");
  EXPECT_FALSE(std::filesystem::exists(dir.path("m.safetensors")));
}

TEST(L03_TrainCli, StepsBeyondInt64IsAUsageError) {
  mt_test::TempDir dir;  // strtoll saturated 99999999999999999999 to INT64_MAX silently
  auto r = run_command(train(dir, config(), "--steps 99999999999999999999"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("out of range"));
}

TEST(L03_TrainCli, DivergingRunStopsWithTheStepAndSavesNothing) {
  mt_test::TempDir dir;
  auto r = run_command(train(dir, config(kModel, R"("steps": 5, "eval_interval": 0, "log_interval": 1)", "1e300"),
                             "--out " + dir.path("m.safetensors")));
  expect_error(r, 1, "step 2: the loss is");
  EXPECT_THAT(r.output, HasSubstr("lower optimizer.params.lr"));
  EXPECT_FALSE(std::filesystem::exists(dir.path("m.safetensors")));
}

TEST(L03_TrainCli, EvalItersBeyondTheValidationSplitIsClampedWithAWarning) {
  mt_test::TempDir dir;  // 1000000 batches re-read the same few windows for minutes
  auto r = run_command(train(dir, config(kModel, R"("steps": 1, "eval_interval": 1, "eval_iters": 1000000)")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("warning: training.eval_iters 1000000 is more than the 3 batches"));
  EXPECT_THAT(r.output, HasSubstr("val loss"));
}

TEST(L03_TrainCli, EvalItersFlagOverridesTheConfigAndZeroIsAUsageError) {
  mt_test::TempDir dir;
  const std::string cfg = config(kModel, R"("steps": 1, "eval_interval": 1, "eval_iters": 1000000)");
  auto r = run_command(train(dir, cfg, "--eval-iters 2"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, testing::Not(HasSubstr("warning: training.eval_iters"))) << "2 of the 3 batches: no clamp";
  EXPECT_THAT(r.output, HasSubstr("val loss"));
  r = run_command(train(dir, cfg, "--eval-iters 5"));  // the flag's value is what the clamp sees
  EXPECT_THAT(r.output, HasSubstr("warning: training.eval_iters 5 is more than the 3 batches")) << r.output;
  r = run_command(train(dir, cfg, "--eval-iters 0"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--eval-iters: must be at least 1, got 0"));
}

TEST(L03_SampleCli, PaddedVocabularyNeverSamplesUndecodableIds) {
  mt_test::TempDir dir;  // vocab_size 128 for a ~25-character corpus: sampling drew ids >= 25
  const std::string ckpt = dir.path("m.safetensors");
  ASSERT_EQ(run_command(train(dir, config(R"("n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16, "vocab_size": 128)"),
                              "--out " + ckpt)).exit_code, 0);
  for (int seed = 1; seed <= 3; ++seed) {
    auto r = run_command(bin("minitorch-sample") + " --checkpoint " + ckpt + " --tokens 400 --temperature 3 --seed " +
                         std::to_string(seed));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(mt_test::error_lines(r.output), 0) << r.output;
  }
}

TEST(L03_EvalCli, IntegerDtypeForAFloatWeightIsOneClearError) {
  mt_test::TempDir dir;  // an I32 header over F32 bytes loaded, trained on, exit 0
  const std::string ckpt = dir.path("m.safetensors");
  ASSERT_EQ(run_command(train(dir, config(), "--out " + ckpt)).exit_code, 0);
  std::ifstream in(ckpt, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = bytes.find(R"("transformer.wpe.weight":{"dtype":"F32")");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(bytes.find("F32", at), 3, "I32");
  const std::string bad = dir.write("i32.safetensors", bytes);
  expect_error(run_command(bin("minitorch-eval") + " --checkpoint " + bad + " --data " + corpus(dir)), 1,
               "dtype mismatch for 'transformer.wpe.weight': checkpoint has i32, the model has f32");
  // --resume: the same bytes over the saved model, beside its manifest. Whichever check fires first
  // (the manifest's checksum), it is one error and nothing is trained or written.
  dir.write("m.safetensors", bytes);
  auto r = run_command(train(dir, config(), "--resume " + ckpt + " --out " + dir.path("again.safetensors")));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_THAT(r.output, testing::Not(HasSubstr("step ")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("again.safetensors")));
}
