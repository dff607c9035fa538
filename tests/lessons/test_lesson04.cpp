// Lesson 04 (the device), run as a student runs it: `lesson-04 --auto --quick` from the repository root (naming
// lesson-04 here makes test-lessons depend on it). It must exit 0 and print what its beats promise — every copy
// counted alike by minitorch and the ledger, the step's input and output bytes equal to the formula, the
// caching allocator's replay peaking where the sim pool did, the step that asks the system nothing, the three
// softmax versions within tolerance, the op table passed on every backend, the GPT's losses on sim bit for bit
// the CPU's with 16Ψ of model states — and every line its guide quotes.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "lesson_util.h"
#include "test_util.h"

namespace {

using namespace lesson_test;

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

TEST(L04_Lesson, RunsQuickOnSimAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  const CommandResult r = run_lesson("04", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int k = 1; k <= 6; ++k) EXPECT_TRUE(has(r, "--- beat " + std::to_string(k) + "/6: ")) << k << "\n" << r.output;
  EXPECT_TRUE(has(r, "Lesson 04 done.")) << r.output;
  EXPECT_FALSE(has(r, "DIFFERENT")) << r.output;

  // Beat 1: after the last copy both counters hold one MiB each way.
  EXPECT_TRUE(has(r, "minitorch counts h2d  1048576  d2h  1048576 | the ledger h2d  1048576  d2h  1048576")) << r.output;
  EXPECT_TRUE(has(r, "io_h2d 16640 B: x, y and the positions, A·(2·B·T + T)·4 = 16640 (equal)")) << r.output;
  // Beat 2: a step that asks the system nothing, and the replay's peak = the pool's.
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\nstep 3 +226 +226 +[0-9.]+ +0 +226 )"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(the replay's peak requested ([0-9]+) B, the sim pool's own peak \1 B \(equal\))")))
      << r.output;
  // Beats 3 and 4: the tree ends in one value; three versions timed, each within the tolerance.
  EXPECT_TRUE(has(r, "distinct        16         8         4         2         1")) << r.output;
  const std::regex version(R"(\n  (naive|lanes|wide): [^\n]*? ([0-9.]+) +([0-9.]+) +([0-9]+)% +([0-9.e+-]+)(?=\n))");
  int versions = 0;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), version); it != std::sregex_iterator(); ++it) {
    EXPECT_LT(std::stod((*it)[5]), 1e-5) << (*it)[0];
    EXPECT_GT(std::stod((*it)[2]), 0) << (*it)[0];
    ++versions;
  }
  EXPECT_EQ(versions, 3) << r.output;
  EXPECT_TRUE(has(r, "every version is within it")) << r.output;
  // Without a usable GPU: one line says so and the kernels' source follows.
  if (!has(r, "cuda:0:")) {
    EXPECT_TRUE(has(r, "No GPU run: ")) << r.output;
    EXPECT_TRUE(has(r, "__global__ void softmax_naive_kernel(")) << r.output;
    EXPECT_TRUE(has(r, "__shfl_xor_sync(0xffffffffu, v, o)")) << r.output;
  }
  // Beat 5: every case on every backend.
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(cpu +against the naive reference: ([0-9]+) of \1 cases passed)"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(sim +against the naive reference: ([0-9]+) of \1 cases passed)"))) << r.output;
  // Beat 6.
  EXPECT_TRUE(has(r, "all 20 losses equal bit for bit")) << r.output;
  expect_guide_blocks("04", args, r.output);
}

TEST(L04_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("04"); }

TEST(L04_Lesson, MissingDataSaysHowToMakeIt) {
  const CommandResult r = run_lesson("04", "--auto --quick --data /nonexistent/kjv.txt");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, "make data")) << r.output;
}

}  // namespace
