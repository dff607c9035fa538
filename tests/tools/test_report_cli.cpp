// `minitorch-train --report`: the file is written at the end with the run's numbers, and a report
// path that cannot be written fails before training, with one error and nothing left behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"

using mt_test::bin;

namespace {
const char* kConfig = R"({
  "train_batch_size": 4, "train_micro_batch_size_per_gpu": 4,
  "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
  "bf16": {"enabled": true},
  "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16},
  "training": {"steps": 3, "eval_interval": 3, "eval_iters": 2, "log_interval": 1, "seed": 7}
})";

std::string setup(const mt_test::TempDir& dir) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth.\n";
  dir.write("corpus.txt", text);
  return dir.write("config.json", kConfig);
}
}  // namespace

TEST(L05_ReportCli, OneRankBf16ReportHoldsStepsValidationAnd16BytesPerParameter) {
  mt_test::TempDir dir;
  const std::string config = setup(dir), report = dir.path("out/report.json");
  auto r = mt_test::run_command(bin("minitorch-train") + " --config " + config + " --data " + dir.path("corpus.txt") +
                                " --out '' --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(j["world_size"], 1);
  EXPECT_EQ(j["dtype"], "bf16");
  ASSERT_EQ(j["steps"].size(), 3u);
  EXPECT_EQ(j["steps"][2]["step"], 3);
  ASSERT_EQ(j["val"].size(), 1u);
  const std::int64_t psi = j["num_parameters"];
  const auto& ms = j["ranks"][0]["model_states"];
  EXPECT_EQ(ms["param"], 2 * psi);
  EXPECT_EQ(ms["grad"], 2 * psi);
  EXPECT_EQ(ms["optim"], 12 * psi);
  EXPECT_EQ(j["ranks"][0]["comm_last_step"]["all_reduce"]["calls"], 0) << "one rank sends nothing";
  EXPECT_EQ(j["formulas"]["comm_elements_per_step"], 0.0);
  for (const auto& e : std::filesystem::directory_iterator(dir.path("out")))
    EXPECT_EQ(e.path().filename(), "report.json") << "a temporary file was left behind";
}

TEST(L05_ReportCli, UnwritableReportPathFailsBeforeTraining) {
  mt_test::TempDir dir;
  const std::string config = setup(dir);
  dir.write("blocker", "a file where a directory should be");
  auto r = mt_test::run_command(bin("minitorch-train") + " --config " + config + " --data " + dir.path("corpus.txt") +
                                " --out '' --report " + dir.path("blocker/report.json"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "--report")) << r.output;
  EXPECT_FALSE(mt_test::contains(r.output, "step ")) << "it trained before failing:\n" << r.output;
}
