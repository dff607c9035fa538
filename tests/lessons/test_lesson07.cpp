// Lesson 07 (ZeRO-3), run as a student runs it: `lesson-07 --auto --quick` under mpirun on 4 ranks from
// the repository root (naming lesson-07 here makes test-lessons depend on it). It must exit 0, print
// the numbers its beats promise — every rank's model states equal to (P+G+K)(Ψ+padding)/N, the param
// pool's peak during forward below the whole model, a step's gathers and reduce-scatters equal to
// 3(N-1)/N·Ψ, the paper's 7.5B row, stage 3 training like DDP, the frames of beats 2 and 3 cell by
// cell — and every line its guide quotes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>

#include "lesson_util.h"
#include "test_util.h"

namespace {

using namespace lesson_test;

CommandResult run07(const std::string& args, const std::string& typed = "") {
  return typed.empty() ? run_lesson("07", args) : run_lesson_typing("07", args, typed);
}

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

/// The first number after `label` (a regex prefix) in the output; NaN if absent.
double number_after(const CommandResult& r, const std::string& label) {
  std::smatch m;
  if (std::regex_search(r.output, m, std::regex(label + R"(\s*([-+0-9.eE]+))"))) return std::stod(m[1]);
  return std::nan("");
}

/// Beats 2 and 3 print frames of their forward and backward (lessons/common/frames.h): h.0's all-gather
/// leaves the outer unit and h.0 whole on every rank and the other blocks sharded; its release takes
/// h.0 back to the own shards, with h.1's prefetch in flight; after h.2's reduce-scatter each rank holds
/// the reduced own shard of h.2's and h.3's gradients and nothing else of them.
void expect_zero3_frames(const CommandResult& r) {
  const std::vector<PrintedFrame> frames = printed_frames(r.output);
  const PrintedFrame* gathered = find_frame(frames, "all-gather h.0");
  const PrintedFrame* released = find_frame(frames, "release h.0");
  const PrintedFrame* reduced = find_frame(frames, "reduce-scatter h.2");
  for (const PrintedFrame* f : {gathered, released, reduced}) {
    ASSERT_NE(f, nullptr) << r.output;
    ASSERT_EQ(f->ranks(), 4) << f->label << "\n" << r.output;
    ASSERT_EQ(f->owners.size(), 5u) << f->label << "\n" << r.output;  // outer, h.0 ... h.3
  }
  EXPECT_TRUE(gathered < released && released < reduced) << r.output;
  EXPECT_EQ(gathered->phase, "forward") << gathered->header;
  EXPECT_EQ(released->phase, "forward") << released->header;
  EXPECT_EQ(reduced->phase, "backward") << reduced->header;
  EXPECT_TRUE(gathered->note("all-gather: every rank now holds all of h.0's parameters, for its forward")) << r.output;
  EXPECT_TRUE(gathered->note("all_gather bucket 1 (h.0) [16512, 214784): 148704 elements, 594816 bytes per rank, ranks 0-3"))
      << r.output;
  EXPECT_TRUE(released->note("release: h.0's gathered parameters are freed")) << r.output;
  EXPECT_TRUE(reduced->note("reduce_scatter bucket 3 (h.2) [413056, 611328): 148704 elements, 594816 bytes per rank"))
      << r.output;
  for (std::size_t b = 0; b < 5; ++b) {
    expect_cells(*gathered, "params", b, b <= 1 ? '+' : '#', b <= 1 ? '+' : '.');
    expect_cells(*released, "params", b, b == 0 ? '+' : b == 2 ? ':' : '#', b == 0 ? '+' : b == 2 ? ':' : '.');
    for (const PrintedFrame* f : {gathered, released}) {
      expect_cells(*f, "grads", b, '#', '.');
      expect_cells(*f, "optim", b, '#', '.');
    }
    if (b >= 3) expect_cells(*reduced, "grads", b, '*', '.');  // h.2 and h.3
    expect_cells(*reduced, "optim", b, '#', '.');
  }
}

TEST(L07_Lesson, RunsQuickOn4RanksAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  const CommandResult r = run07(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int k = 1; k <= 7; ++k) EXPECT_TRUE(has(r, "--- beat " + std::to_string(k) + "/7: ")) << k << "\n" << r.output;
  EXPECT_TRUE(has(r, "Lesson 07 done.")) << r.output;

  // Beat 1: the allocator's bytes on every rank are the partition's plan and the formula 16Ψ/N, to the byte.
  const std::int64_t psi = 809600, N = 4;
  EXPECT_EQ(number_after(r, "psi ="), psi) << r.output;
  for (int rank = 0; rank < N; ++rank)
    EXPECT_TRUE(std::regex_search(r.output, std::regex("\\n\\s*" + std::to_string(rank) +
                                                       R"(\s+809600\s+809600\s+1619200\s+3238400\s+3238400\n)")))
        << "rank " << rank << "\n" << r.output;
  EXPECT_TRUE(has(r, "measured 3238400 B on every rank = formula 16*809600/4 = 3238400 B (equal)")) << r.output;

  // Beat 2: during forward the param pool never holds the whole model.
  const double peak = number_after(r, "peak during forward"), shards = number_after(r, "param pool: shards");
  EXPECT_EQ(shards, 4.0 * psi / N) << r.output;
  EXPECT_LT(peak, 4.0 * psi) << r.output;
  EXPECT_GT(peak, shards) << r.output;
  EXPECT_TRUE(has(r, "(peak is below it)")) << r.output;

  // Beat 3: after the step only the shards are left.
  EXPECT_EQ(number_after(r, "after the step: param pool"), 4.0 * psi / N) << r.output;
  expect_zero3_frames(r);

  // Beat 4: what the events counted is 3(N-1)/N·Ψ elements.
  EXPECT_EQ(number_after(r, "gathers \\+ reduce-scatters: measured"), 3.0 * (N - 1) * psi / N) << r.output;
  EXPECT_TRUE(has(r, "= 1821600 elements (equal)")) << r.output;

  // Beat 5: the paper's N = 64 row (31.4 / 16.6 / 1.88 GB) and every cell agreeing.
  EXPECT_TRUE(has(r, "every cell within the last printed digit of the paper's: yes")) << r.output;

  // Beat 7: stage 3 trains like DDP.
  EXPECT_LT(number_after(r, "largest relative loss difference over 10 steps:"), 1e-5) << r.output;
  EXPECT_NEAR(number_after(r, "ZeRO-3 on 4 ranks: train loss"), number_after(r, "DDP on 4 ranks \\(lesson 05\\): train loss"),
              1e-3)
      << r.output;
  EXPECT_LT(number_after(r, "ZeRO-3 on 4 ranks: train loss"), 4.0) << r.output;
  expect_guide_figures("07", args, r.output);
}

TEST(L07_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("07"); }

TEST(L07_Lesson, OneRankExplainsHowToStartIt) {
  const CommandResult r = mt_test::run_command(kBin + "/lesson-07 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "mpirun -np 4 build/bin/lesson-07")) << r.output;
  EXPECT_TRUE(has(r, "make lesson-07")) << r.output;
}

TEST(L07_Lesson, UnknownOptionUnderMpirunIsOneLineAndExit2) {
  const CommandResult r = run07("--auto --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;  // rank 0 says it, for every rank
  EXPECT_TRUE(has(r, "unknown option '--bogus'")) << r.output;
  EXPECT_TRUE(has(r, "--data FILE, --steps N, --prefetch N, --help")) << r.output;
}

// Only rank 0 reads the terminal; q there ends every rank, after beat 1.
TEST(L07_Lesson, QOnRankZeroQuitsEveryRank) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const CommandResult r = run07("--quick", "q\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 1/7:")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 1/7)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 2/7:")) << r.output;
}

// The full run (200 steps at stage 3 and again with DDP, about a minute here): what the guide quotes
// from it. build/bin/test-lessons --gtest_also_run_disabled_tests --gtest_filter='L07_*FullRun*'
TEST(L07_Lesson, DISABLED_FullRunPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto";
  const CommandResult r = run07(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_guide_figures("07", args, r.output);
}

}  // namespace
