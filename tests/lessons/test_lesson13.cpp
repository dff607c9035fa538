// Lesson 13 (tensor parallelism), run as a student runs it: `lesson-13 --auto --quick` under mpirun on 8 ranks from
// the repository root (naming lesson-13 here makes test-lessons depend on it). It must exit 0 and print what its
// beats promise — the column- and row-split Linear equal to the unsplit one to the bit; f and g's all-reduces on
// the side each promises, g's backward the 1-rank gradient; one block's 2 + 2 all-reduces of B·T·C and the whole
// model's counts equal to their formulas; the vocabulary-parallel loss equal to the plain one with 3 all-reduces of
// N floats and none backward; every rank's grid coordinates and groups the formula's; lesson 05's KJV run on the
// grid with DDP's losses — and every line its guide quotes. On 2 ranks it runs too; alone, or on an odd number of ranks, it says how to start it.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "lesson_util.h"
#include "test_util.h"

namespace {

using namespace lesson_test;

/// build/bin/lesson-13 with `args` under mpirun on `ranks` ranks from the repository root, `typed` on its input.
CommandResult run13(const std::string& args, int ranks = 8, const std::string& typed = "") {
  const std::string command = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -q --oversubscribe "
                              "--bind-to none -np " + std::to_string(ranks) + " " + kBin + "/lesson-13 " + args;
  return mt_test::run_command("cd " + kSource + " && " +
                              (typed.empty() ? command : "(printf '" + typed + "' | " + command + ")"));
}

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

int count(const std::string& out, const std::string& text) {
  int n = 0;
  for (std::size_t at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) ++n;
  return n;
}

/// The text of beat k (from its heading to the next one's).
std::string beat(const std::string& out, int k) {
  const std::size_t from = out.find("--- beat " + std::to_string(k) + "/6: ");
  if (from == std::string::npos) return "";
  const std::size_t to = out.find("--- beat " + std::to_string(k + 1) + "/6: ", from);
  return out.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

void expect_every_beat(const CommandResult& r) {
  for (int k = 1; k <= 6; ++k) EXPECT_TRUE(has(r, "--- beat " + std::to_string(k) + "/6: ")) << k << "\n" << r.output;
  EXPECT_TRUE(has(r, "Lesson 13 done.")) << r.output;
  EXPECT_FALSE(has(r, "DIFFERENT")) << r.output;
}

}  // namespace

TEST(L13_Lesson, RunsQuickOn8RanksAndPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto --quick";
  const CommandResult r = run13(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_every_beat(r);
  const std::string b1 = beat(r.output, 1), b2 = beat(r.output, 2), b3 = beat(r.output, 3), b4 = beat(r.output, 4),
                    b5 = beat(r.output, 5), b6 = beat(r.output, 6);
  // Beat 1: both splits equal to the unsplit layer to the bit; the column split moves nothing, the row split one.
  EXPECT_TRUE(mt_test::contains(b1, "max |[y_0 | y_1] - y| = 0 (= unsplit); all-reduces in forward: 0")) << b1;
  EXPECT_TRUE(mt_test::contains(b1, "max |all-reduced - y| = 0 (= unsplit); all-reduces in forward: 1,")) << b1;
  // Beat 2: f all-reduces backward only, g forward only; g's backward is the 1-rank gradient.
  EXPECT_TRUE(mt_test::contains(b2, "all-reduces: forward 0, backward 1; x.grad = the sum of the branches' dL/dy (= sum)")) << b2;
  EXPECT_TRUE(mt_test::contains(b2, "all-reduces: forward 1, backward 0\n")) << b2;
  EXPECT_TRUE(mt_test::contains(b2, "dL/dx_q = c (= g's backward)")) << b2;
  // Beat 3: 2 + 2 all-reduces of B·T·C in the block, the whole model's counts, the unsplit outputs and loss.
  EXPECT_EQ(count(b3, "  forward   all_reduce  "), 2) << b3;
  EXPECT_EQ(count(b3, "  backward  all_reduce  "), 2) << b3;
  EXPECT_EQ(count(b3, "(= formula)"), 5) << b3;
  EXPECT_EQ(count(b3, "(= unsplit"), 3) << b3;
  EXPECT_EQ(count(b3, " split\n"), 6) << "c_attn and c_fc weight and bias, both c_proj weights\n" << b3;
  EXPECT_EQ(count(b3, " replicated\n"), 6) << "the LayerNorms and the row layers' biases\n" << b3;
  // Beat 4: the loss and the gradient of the plain cross-entropy; 3 all-reduces forward, none backward.
  EXPECT_EQ(count(b4, "(= plain)"), 2) << b4;
  EXPECT_TRUE(mt_test::contains(b4, "all-reduces: forward 3, backward 0\n")) << b4;
  EXPECT_EQ(count(b4, "(= formula)"), 1) << b4;
  EXPECT_EQ(count(b4, " (on rank 0): "), 1) << "one row whose target is rank 0's\n" << b4;
  EXPECT_EQ(count(b4, " (on rank 1): "), 1) << "one row whose target is rank 1's\n" << b4;
  std::smatch m;
  const std::regex row_loss(R"(loss_\d+ = ln S \+ m - z_target = ([0-9.]+); from the whole row: ([0-9.]+))");
  int rows = 0;
  for (auto it = std::sregex_iterator(b4.begin(), b4.end(), row_loss); it != std::sregex_iterator(); ++it, ++rows)
    EXPECT_NEAR(std::stod((*it)[1]), std::stod((*it)[2]), 1e-5) << (*it).str();
  EXPECT_EQ(rows, 2) << b4;
  // Beat 5: the 2 × 2 × 2 grid, every rank's coordinates and groups the formula's.
  EXPECT_TRUE(mt_test::contains(b5, "8 ranks = 2 stages × 2 data-parallel replicas × 2 tensor ranks")) << b5;
  EXPECT_EQ(count(b5, "(= formula)"), 8) << b5;
  EXPECT_TRUE(mt_test::contains(b5, "ranks whose coordinates and groups are the formula's: 8 of 8")) << b5;
  EXPECT_TRUE(mt_test::contains(b5, "tensor 1, data 2, pipeline 4")) << b5;
  // Beat 6: the grid's losses are DDP's over the 10 quick steps (the same micro-batches, float order aside).
  EXPECT_TRUE(mt_test::contains(b6, "grid: DDP (stage 0) on 8 ranks (data 2 x pipeline 2 x tensor 2)")) << b6;
  EXPECT_TRUE(mt_test::contains(b6, "largest relative loss difference over 10 steps: ")) << b6;
  EXPECT_TRUE(mt_test::contains(b6, "(the same training)")) << b6;
  expect_guide_blocks("13", args, r.output);
}

// On 2 ranks: one tensor group, and a grid of one stage and one replica.
TEST(L13_Lesson, RunsOnTwoRanks) {
  const CommandResult r = run13("--auto --quick", 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_every_beat(r);
  EXPECT_TRUE(has(r, "(2 ranks: beat 5's grid is 1 × 1 × 2; `make lesson-13` starts 8 ranks")) << r.output;
  EXPECT_TRUE(has(r, "2 ranks = 1 stage × 1 data-parallel replica × 2 tensor ranks")) << r.output;
  EXPECT_TRUE(has(r, "ranks whose coordinates and groups are the formula's: 2 of 2")) << r.output;
}

TEST(L13_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("13"); }

TEST(L13_Lesson, OneRankExplainsHowToStartIt) {
  const CommandResult r = mt_test::run_command(kBin + "/lesson-13 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "This lesson runs on an even number of ranks")) << r.output;
  EXPECT_TRUE(has(r, "mpirun -np 8 build/bin/lesson-13")) << r.output;
  EXPECT_TRUE(has(r, "`make lesson-13` (8 ranks)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 1/6")) << r.output;
  // An odd number of ranks cannot form tensor groups of 2: the same message, every rank stops.
  const CommandResult odd = run13("--auto", 3);
  ASSERT_EQ(odd.exit_code, 0) << odd.output;
  EXPECT_TRUE(has(odd, "This lesson runs on an even number of ranks")) << odd.output;
  EXPECT_FALSE(has(odd, "--- beat 1/6")) << odd.output;
}

TEST(L13_Lesson, UnknownOptionUnderMpirunIsOneLineAndExit2) {
  const CommandResult r = run13("--auto --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;  // rank 0 says it, for every rank
  EXPECT_TRUE(has(r, "unknown option '--bogus'")) << r.output;
  EXPECT_TRUE(has(r, "lesson-13 takes --auto, --quick, --beat N, --data FILE, --steps N, --help")) << r.output;
}

// Only rank 0 reads the terminal; q there ends every rank, after beat 1.
TEST(L13_Lesson, QOnRankZeroQuitsEveryRank) {
  const CommandResult r = run13("--quick", 8, "q\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 1/6:")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 1/6)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 2/6:")) << r.output;
}
