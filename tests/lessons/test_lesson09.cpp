// Lesson 09 (pipeline parallelism), run as a student runs it: `lesson-09 --auto --quick` under mpirun on
// 4 ranks from the repository root (naming lesson-09 here makes test-lessons depend on it). It must exit
// 0 and print what its beats promise — both schedules' clock bubble = (P−1)/(M+P−1), GPipe keeping all M
// micro-batches alive on every stage and 1F1B P − s, the point-to-point and tied-weight bytes equal to
// their formulas, the tied weight equal on both end stages, the 2 × 2 grid training like one rank — and
// every line its guide quotes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>

#include "lesson_util.h"
#include "test_util.h"

namespace {

using namespace lesson_test;

CommandResult run09(const std::string& args, const std::string& typed = "") {
  return typed.empty() ? run_lesson("09", args) : run_lesson_typing("09", args, typed);
}

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

/// The first number after `label` (a regex prefix) in the output; NaN if absent.
double number_after(const CommandResult& r, const std::string& label) {
  std::smatch m;
  if (std::regex_search(r.output, m, std::regex(label + R"(\s*([-+0-9.eE]+))"))) return std::stod(m[1]);
  return std::nan("");
}

TEST(L09_Lesson, RunsQuickOn4RanksAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  const CommandResult r = run09(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int k = 1; k <= 6; ++k) EXPECT_TRUE(has(r, "--- beat " + std::to_string(k) + "/6: ")) << k << "\n" << r.output;
  EXPECT_TRUE(has(r, "Lesson 09 done.")) << r.output;

  // Beat 1: on the clock both schedules idle exactly the formula; GPipe keeps M alive, 1F1B P - s.
  EXPECT_TRUE(has(r, "GPipe, P = 4 stages, M = 8 micro-batches:")) << r.output;
  const std::regex bubble_re(R"(bubble on the clock ([0-9.]+) = \(P-1\)/\(M\+P-1\) = 3/11 = ([0-9.]+); micro-batches alive at most, per stage: ([0-9 ]+)\n)");
  std::vector<std::string> alive;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), bubble_re); it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[1], "0.2727") << r.output;
    EXPECT_EQ((*it)[2], "0.2727") << r.output;
    alive.push_back((*it)[3]);
  }
  ASSERT_EQ(alive.size(), 2u) << r.output;
  EXPECT_EQ(alive[0], "8 8 8 8") << r.output;
  EXPECT_EQ(alive[1], "4 3 2 1") << r.output;

  // Beat 3: the measured alive micro-batches per stage, and GPipe's activation peak above 1F1B's.
  const std::regex peak_re(R"(\n\s*(\d)\s+(\d+) \(= (\d+)\)\s+([0-9.]+) MiB\s+(\d+) \(= (\d+)\)\s+([0-9.]+) MiB\s+([0-9.]+)x)");
  int rows = 0;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), peak_re); it != std::sregex_iterator(); ++it) {
    const int s = std::stoi((*it)[1]);
    EXPECT_EQ(std::stoi((*it)[2]), 8) << "stage " << s << "\n" << r.output;
    EXPECT_EQ((*it)[2], (*it)[3]) << "stage " << s << "\n" << r.output;
    EXPECT_EQ(std::stoi((*it)[5]), 4 - s) << "stage " << s << "\n" << r.output;
    EXPECT_EQ((*it)[5], (*it)[6]) << "stage " << s << "\n" << r.output;
    if (s < 3) {
      EXPECT_GT(std::stod((*it)[8]), 1.5) << "stage " << s << "\n" << r.output;  // 8 alive against 4 - s
    }
    ++rows;
  }
  EXPECT_EQ(rows, 4) << r.output;

  // Beat 4: the bytes between stages are the formulas, to the byte; both copies of wte equal.
  EXPECT_FALSE(has(r, "DIFFERENT")) << r.output;
  EXPECT_TRUE(has(r, "5 more micro-batches alive;")) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(formula 5 x 4·\(15·BTC \+ B·H·T² \+ 4·BT\) = 5 x \d+ = \d+ bytes\s+\(= measured\))")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(activations: measured \d+ bytes per step .*\(= formula\))")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(tied weight: measured \d+ bytes per step .*\(= formula\))")))
      << r.output;
  EXPECT_EQ(number_after(r, "wte on stage 0 and stage 3 after 3 steps: max \\|difference\\|"), 0.0) << r.output;

  // Beat 5: the grid's losses are one rank's; beat 6's are lesson 05's DDP run's.
  EXPECT_TRUE(has(r, "world rank 1: stage 0, data-parallel rank 1")) << r.output;
  EXPECT_TRUE(has(r, "world rank 2: stage 1, data-parallel rank 0")) << r.output;
  EXPECT_LT(number_after(r, "largest relative difference over 5 steps:"), 1e-5) << r.output;
  EXPECT_LT(number_after(r, "largest relative loss difference over 10 steps:"), 1e-5) << r.output;
  EXPECT_NEAR(number_after(r, "pipeline on 4 ranks: train loss"), number_after(r, "DDP on 4 ranks \\(lesson 05\\): train loss"),
              1e-3)
      << r.output;
  EXPECT_LT(number_after(r, "pipeline on 4 ranks: train loss"), 3.6) << r.output;
  expect_guide_figures("09", args, r.output);
}

TEST(L09_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("09"); }

TEST(L09_Lesson, OneRankExplainsHowToStartIt) {
  const CommandResult r = mt_test::run_command(kBin + "/lesson-09 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "mpirun -np 4 build/bin/lesson-09")) << r.output;
  EXPECT_TRUE(has(r, "make lesson-09")) << r.output;
}

TEST(L09_Lesson, UnknownOptionUnderMpirunIsOneLineAndExit2) {
  const CommandResult r = run09("--auto --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;  // rank 0 says it, for every rank
  EXPECT_TRUE(has(r, "unknown option '--bogus'")) << r.output;
  EXPECT_TRUE(has(r, "--data FILE, --steps N, --help")) << r.output;
}

// Only rank 0 reads the terminal; q there ends every rank, after beat 1.
TEST(L09_Lesson, QOnRankZeroQuitsEveryRank) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const CommandResult r = run09("--quick", "q\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 1/6:")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 1/6)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 2/6:")) << r.output;
}

// The full run (200 steps of beat 6 and M up to 16 in beat 2, minutes here): what the guide quotes from
// it. build/bin/test-lessons --gtest_also_run_disabled_tests --gtest_filter='L09_*FullRun*'
TEST(L09_Lesson, DISABLED_FullRunPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto";
  const CommandResult r = run09(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_guide_figures("09", args, r.output);
}

}  // namespace
