// Lesson 10 (memory on a card), run as a student runs it: `lesson-10 --auto --quick` under mpirun on 4 ranks
// from the repository root (naming lesson-10 here makes test-lessons depend on it). It must exit 0 and print
// what its beats promise — DDP, ZeRO-2 on the deeper GPT and ZeRO-3 at the longer sequence out of memory on
// every rank at the same allocation, the others fitting the card, every model-state, host and transfer
// figure equal to its formula, the same bytes on every rank, the offloaded training's losses bit for bit
// those without offload — and every line its guide quotes.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "lesson_util.h"
#include "test_util.h"

namespace {

using namespace lesson_test;

CommandResult run10(const std::string& args, const std::string& typed = "") {
  return typed.empty() ? run_lesson("10", args) : run_lesson_typing("10", args, typed);
}

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

int count(const CommandResult& r, const std::string& text) {
  int n = 0;
  for (std::size_t at = r.output.find(text); at != std::string::npos; at = r.output.find(text, at + 1)) ++n;
  return n;
}

TEST(L10_Lesson, RunsQuickOn4RanksAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  const CommandResult r = run10(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int k = 1; k <= 8; ++k) EXPECT_TRUE(has(r, "--- beat " + std::to_string(k) + "/8: ")) << k << "\n" << r.output;
  EXPECT_TRUE(has(r, "Lesson 10 done.")) << r.output;

  // The three runs that do not fit the card fail on every rank, at the same allocation; the real error is shown.
  EXPECT_EQ(count(r, "out of memory on 4 of 4 ranks in step 2, every rank at the same allocation"), 3) << r.output;
  EXPECT_TRUE(has(r, "out of memory on sim of rank 0: ")) << r.output;
  EXPECT_TRUE(has(r, "this run: ZeRO stage 0 (DDP)")) << r.output;
  EXPECT_TRUE(has(r, "this run: ZeRO stage 2,")) << r.output;
  // The four runs that fit, and every figure beside its formula, on every rank.
  EXPECT_EQ(count(r, "fits: the device's peak"), 4) << r.output;
  EXPECT_EQ(count(r, "(= measured), the same on every rank"), 4) << r.output;
  EXPECT_EQ(count(r, "(= formula)"), 3) << r.output;
  EXPECT_FALSE(has(r, "DIFFERENT")) << r.output;
  EXPECT_FALSE(has(r, "ranks DIFFER")) << r.output;
  // The closing table: DDP, ZeRO-2 and ZeRO-3 over the card, offload fitting; measured = formula in every cell.
  const std::regex row(R"(\n(DDP|ZeRO-[0-9][^\n]*?)\s+([0-9.]+) \([^=\n]+= ([0-9.]+)\)\s+([0-9.]+)\s+([0-9.]+) (fits|> card)\s+([^\n]*))");
  int rows = 0;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), row); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    EXPECT_EQ((*it)[2], (*it)[3]) << name << ": device model states measured vs formula\n" << r.output;
    EXPECT_EQ((*it)[6] == "fits", name.find("offload") != std::string::npos) << name << "\n" << r.output;
    std::smatch cells;
    const std::string rest = (*it)[7];
    if (std::regex_search(rest, cells, std::regex(R"(([0-9.]+) \(([0-9.]+)\)\s+([0-9.]+) \(([0-9.]+)\)\s+([0-9.]+) \(([0-9.]+)\))"))) {
      for (int k = 1; k <= 5; k += 2) EXPECT_EQ(cells[k], cells[k + 1]) << name << ": " << rest;
    } else {
      EXPECT_EQ(name.find("offload"), std::string::npos) << name << " has no host bytes: " << rest;
    }
    ++rows;
  }
  EXPECT_EQ(rows, 6) << "DDP, ZeRO-2, ZeRO-3, + offload, + checkpointing, + cpu_checkpointing\n" << r.output;
  EXPECT_TRUE(has(r, "every rank measured the same bytes: yes")) << r.output;
  EXPECT_TRUE(has(r, "losses of every step: bit-identical with and without offload")) << r.output;
  expect_guide_blocks("10", args, r.output);
}

TEST(L10_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("10"); }

TEST(L10_Lesson, OneRankExplainsHowToStartIt) {
  const CommandResult r = mt_test::run_command(kBin + "/lesson-10 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "mpirun -np 4 build/bin/lesson-10")) << r.output;
  EXPECT_TRUE(has(r, "make lesson-10")) << r.output;
}

TEST(L10_Lesson, UnknownOptionUnderMpirunIsOneLineAndExit2) {
  const CommandResult r = run10("--auto --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;  // rank 0 says it, for every rank
  EXPECT_TRUE(has(r, "unknown option '--bogus'")) << r.output;
  EXPECT_TRUE(has(r, "--data FILE, --steps N, --device-memory SIZE, --help")) << r.output;
}

TEST(L10_Lesson, ACardThatIsNotASizeIsOneLineAndExit2) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const CommandResult r = run10("--auto --device-memory lots");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(has(r, "--device-memory: 'lots' is not a size")) << r.output;
}

// Only rank 0 reads the terminal; q there ends every rank, after beat 1.
TEST(L10_Lesson, QOnRankZeroQuitsEveryRank) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const CommandResult r = run10("--quick", "q\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 1/8:")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 1/8)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 2/8:")) << r.output;
}

// The full run (200 steps of each training run of beat 8, about a minute here): what the guide quotes from it.
// build/bin/test-lessons --gtest_also_run_disabled_tests --gtest_filter='L10_*FullRun*'
TEST(L10_Lesson, DISABLED_FullRunPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto";
  const CommandResult r = run10(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "losses of every step: bit-identical with and without offload")) << r.output;
  expect_guide_blocks("10", args, r.output);
}

}  // namespace
