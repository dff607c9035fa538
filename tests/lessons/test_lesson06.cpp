// Lesson 06 (ZeRO-1 and ZeRO-2), run as a student runs it: lesson-06 under mpirun on 4 ranks from the
// repository root (naming it here makes test-lessons depend on it). The quick run must exit 0, show its
// six beats, print the numbers they promise — every rank's model-state bytes equal to the formula and to
// the estimator's plan, each step's gradient traffic equal to 2(N-1)/N·Ψ·4, the 7.5B table as the paper
// prints it, ZeRO-1 and ZeRO-2 training to DDP's losses and DDP to lesson 05's, the frames of beats 3
// and 4 cell by cell — and every figure its guide quotes (lesson_util.h).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "lesson_util.h"
#include "test_util.h"

namespace {

using namespace lesson_test;

const std::string kLesson06 = kBin + "/lesson-06 ";

CommandResult run06(const std::string& args) {
  return run_lesson("06", args);
}

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

/// How many times `text` is in the output.
int count(const CommandResult& r, const std::string& text) {
  int n = 0;
  for (std::size_t at = r.output.find(text); at != std::string::npos; at = r.output.find(text, at + 1)) ++n;
  return n;
}

/// Every match of `pattern`'s first group, as numbers.
std::vector<double> numbers(const std::string& text, const std::string& pattern) {
  std::vector<double> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back(std::stod((*it)[1]));
  return out;
}

/// Beats 3 and 4 print their recorded step as frames (lessons/common/frames.h). ZeRO-1, after bucket 0's
/// reduce-scatter: each rank's own shard of bucket 0 reduced, its own shard of bucket 1 reducing (launched
/// with bucket 0, after backward: two in flight at most), every other gradient still local; at the
/// end, after the all-gather: all parameters whole, own shards reduced, the rest of the local gradients
/// kept, optimizer states on the own shards only. ZeRO-2: the same, except that a reduced bucket's local
/// gradients are gone, from the moment its reduce-scatter began.
void expect_zero12_frames(const CommandResult& r) {
  const std::vector<PrintedFrame> frames = printed_frames(r.output);
  const PrintedFrame* rs1 = find_frame(frames, "reduce-scatter bucket 0");
  const PrintedFrame* ag1 = find_frame(frames, "all-gather the updated parameters", 0);
  const PrintedFrame* rs2 = find_frame(frames, "reduce-scatter bucket 1");
  const PrintedFrame* ag2 = find_frame(frames, "all-gather the updated parameters", 1);
  for (const PrintedFrame* f : {rs1, ag1, rs2, ag2}) {
    ASSERT_NE(f, nullptr) << r.output;
    ASSERT_EQ(f->ranks(), 4) << f->label << "\n" << r.output;
    ASSERT_EQ(f->owners.size(), 5u) << f->label << "\n" << r.output;
  }
  EXPECT_TRUE(rs1 < ag1 && ag1 < rs2 && rs2 < ag2) << r.output;  // beat 3's two, then beat 4's
  EXPECT_TRUE(rs1->note("reduce-scatter: each rank now holds, in its own shard of bucket 0, the average over all ranks"))
      << r.output;
  EXPECT_TRUE(rs1->note("reduce_scatter bucket 0 (bucket 0) [0, 198656): 148992 elements, 595968 bytes per rank, ranks 0-3"))
      << r.output;
  EXPECT_TRUE(rs2->note("its full local gradients were freed when the reduction began")) << r.output;
  EXPECT_TRUE(rs2->note("reduce_scatter bucket 1 (bucket 1) [198656, 396928): 148704 elements, 594816 bytes per rank"))
      << r.output;
  for (const PrintedFrame* ag : {ag1, ag2}) {
    EXPECT_EQ(ag->phase, "gather") << ag->header;
    EXPECT_TRUE(ag->note("all_gather [0, 809600): 607200 elements, 2428800 bytes per rank, ranks 0-3")) << r.output;
  }
  for (std::size_t b = 0; b < 5; ++b) {
    // ZeRO-1
    expect_cells(*rs1, "params", b, '=', '=');
    expect_cells(*rs1, "grads", b, b == 0 ? '*' : b == 1 ? '%' : '~', '~');
    expect_cells(*ag1, "params", b, '=', '=');
    expect_cells(*ag1, "grads", b, '*', '~');
    expect_cells(*ag1, "optim", b, '#', '.');
    // ZeRO-2
    expect_cells(*rs2, "params", b, '=', '=');
    if (b <= 1) expect_cells(*rs2, "grads", b, '*', '.');
    expect_cells(*ag2, "params", b, '=', '=');
    expect_cells(*ag2, "grads", b, '*', '.');
    expect_cells(*ag2, "optim", b, '#', '.');
  }
}

}  // namespace

TEST(L06_Lesson, RunsQuickOn4RanksAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  CommandResult r = run06(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::size_t at = 0;  // the six beats, in order
  for (int k = 1; k <= 6; ++k) {
    const std::size_t found = r.output.find("--- beat " + std::to_string(k) + "/6: ", at);
    ASSERT_NE(found, std::string::npos) << "beat " << k << "\n" << r.output;
    at = found;
  }
  // Model states: DDP 16Ψ, ZeRO-1 (P+G)Ψ + KΨ/N = 10Ψ, ZeRO-2 PΨ + (G+K)Ψ/N = 7Ψ on 4 ranks, Ψ = 809600;
  // on every rank the allocator's bytes are the estimator's plan and the formula.
  EXPECT_EQ(count(r, "measured = the estimator's plan on 4 of 4 ranks, = the formula on 4 of 4 ranks  (equal)"), 3)
      << r.output;
  EXPECT_TRUE(has(r, "3238400 + 3238400 + 6476800 = 12953600 bytes = 16.00 psi")) << r.output;
  EXPECT_TRUE(has(r, "3238400 + 3238400 + 1619200 = 8096000 bytes = 10.00 psi")) << r.output;
  EXPECT_TRUE(has(r, "3238400 + 809600 + 1619200 = 5667200 bytes = 7.00 psi")) << r.output;
  // The partition: every element has one owner.
  EXPECT_TRUE(has(r, "sum over the ranks 809600 = psi 809600: every parameter element has exactly one owner"))
      << r.output;
  // Gradient traffic of a ZeRO-1 and a ZeRO-2 step: DDP's 2(N-1)/N·Ψ·4 bytes, measured by every rank's sink.
  const std::vector<double> measured = numbers(r.output, R"(measured (\d+) bytes per rank on 4 of 4 ranks)");
  const std::vector<double> formula = numbers(r.output, R"(formula \d+ elements \* 4 = (\d+) bytes  \(equal\))");
  ASSERT_EQ(measured.size(), 2u) << r.output;
  ASSERT_EQ(formula.size(), 2u) << r.output;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(measured[i], 4857600) << r.output;
    EXPECT_EQ(formula[i], 4857600) << r.output;
  }
  // ZeRO-1 reduces after backward (configs/zero1.json), ZeRO-2 from the hooks during it; no full gradient stays.
  EXPECT_TRUE(has(r, "0 of 5 buckets started from a gradient hook while backward ran (overlap_comm off")) << r.output;
  EXPECT_TRUE(has(r, "5 of 5 buckets started from a gradient hook while backward ran\n")) << r.output;
  EXPECT_TRUE(has(r, "parameters holding a full .grad after the step: 0 of")) << r.output;
  expect_zero12_frames(r);
  // The paper's Table 1 for 7.5B: N = 64 is 31.4 / 16.6 / 1.88 GB.
  const std::regex n64(R"(\n\s*64\s+120\.0\s+31\.41 \[31\.4\]\s+16\.64 \[16\.6\]\s+1\.88 \[1\.88\])");
  EXPECT_TRUE(std::regex_search(r.output, n64))
      << r.output;
  EXPECT_TRUE(has(r, "18 of 18 cells within one unit of the paper's last printed digit")) << r.output;
  // Training: ZeRO-1 and -2 give DDP's losses up to float summation order ...
  const std::vector<double> worst =
      numbers(r.output, R"(largest relative loss difference from DDP over 10 steps: ZeRO-1 (\S+),)");
  ASSERT_EQ(worst.size(), 1u) << r.output;
  EXPECT_LT(worst[0], 1e-5) << r.output;
  EXPECT_LT(numbers(r.output, R"(from DDP over 10 steps: ZeRO-1 \S+, ZeRO-2 (\S+))").at(0), 1e-5) << r.output;
  const std::vector<double> val = numbers(r.output, R"((?:DDP|ZeRO-1|ZeRO-2) +train loss \S+, val loss (\S+),)");
  ASSERT_EQ(val.size(), 3u) << r.output;
  EXPECT_NEAR(val[1], val[0], 1e-3);
  EXPECT_NEAR(val[2], val[0], 1e-3);
  // ... and DDP here is lesson 05's run: the numbers its guide quotes for --quick.
  std::string ddp05;
  for (const std::string& f : guide_figures("05", args))
    if (f.rfind("4 ranks: train loss", 0) == 0) ddp05 = f.substr(std::string("4 ranks: ").size());
  ASSERT_FALSE(ddp05.empty()) << "lesson 05's guide quotes no '4 ranks: train loss' line for " << args;
  EXPECT_TRUE(has(r, "DDP    " + ddp05 + ", model states 12953600 bytes per rank")) << ddp05 << "\n" << r.output;
  expect_guide_figures("06", args, r.output);
}

TEST(L06_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("06"); }

TEST(L06_Lesson, OneRankExplainsHowToStartIt) {
  CommandResult r = mt_test::run_command(kLesson06 + "--auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "mpirun -np 4 build/bin/lesson-06")) << r.output;
  EXPECT_TRUE(has(r, "make lesson-06")) << r.output;
}

// Only rank 0 reads the terminal; what it read reaches every rank, so all quit together.
TEST(L06_Lesson, QOnRankZeroQuitsEveryRank) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  CommandResult r = run_lesson_typing("06", "--quick", "q\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 1/6:")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 1/6)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 2/6:")) << r.output;
}

TEST(L06_Lesson, UnknownOptionUnderMpirunIsOneLineAndExit2) {
  CommandResult r = run06("--auto --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;  // rank 0 says it, for every rank
  EXPECT_TRUE(has(r, "unknown option '--bogus'")) << r.output;
  EXPECT_TRUE(has(r, "--data FILE, --steps N, --bucket N, --help")) << r.output;
}

// The full run (three trainings of 200 steps on 4 ranks, about 5 minutes on 2 cores): what the guide
// quotes from it. Not in ctest; run by hand after changing the lesson or the code under it:
//   build/bin/test-lessons --gtest_also_run_disabled_tests --gtest_filter='L06_*FullRun*'
TEST(L06_Lesson, DISABLED_FullRunPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto";
  CommandResult r = run06(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_guide_figures("06", args, r.output);
}
