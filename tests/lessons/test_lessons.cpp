// The lesson binaries, run as a student runs them (from the repository root) and as CI does
// (`--auto --quick`): lesson-01, lesson-02, lesson-03, lesson-05 and lesson-08 (naming them here makes test-lessons
// depend on them). Each must exit 0, print the numbers its beats promise and every figure its guide
// quotes (lesson_util.h), and name only code that exists. The options every lesson shares (lesson::Beats
// in lessons/common/beat.h) are tested on lesson 01 and lesson 03, the quit at a prompt under mpirun on
// lesson 05.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>

#include "lesson_util.h"
#include "test_util.h"

namespace {

using namespace lesson_test;

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }
bool matches(const CommandResult& r, const std::string& pattern) { return std::regex_search(r.output, std::regex(pattern)); }

/// The first number after `label` (a regex prefix) in the output; NaN if absent.
double number_after(const CommandResult& r, const std::string& label) {
  std::smatch m;
  if (std::regex_search(r.output, m, std::regex(label + R"(\s*([-+0-9.eE]+))"))) return std::stod(m[1]);
  return std::nan("");
}

/// The headings "beat k/total" for k = first..last, in order, and none before first.
void expect_beats(const CommandResult& r, int first, int last, int total) {
  std::size_t at = 0;
  for (int k = first; k <= last; ++k) {
    const std::string heading = "--- beat " + std::to_string(k) + "/" + std::to_string(total) + ": ";
    const std::size_t found = r.output.find(heading, at);
    EXPECT_NE(found, std::string::npos) << heading << "\n" << r.output;
    if (found != std::string::npos) at = found;
  }
  for (int k = 1; k < first; ++k)
    EXPECT_FALSE(has(r, "--- beat " + std::to_string(k) + "/")) << "beat " << k << " shown:\n" << r.output;
}

/// Lesson 05's beat 6 prints one recorded DDP step as frames (lessons/common/frames.h): after backward
/// every rank holds all the parameters and its own local gradients; after the all-reduce, the averages,
/// the same on every rank, for 2(N-1)/N·Ψ·4 bytes per rank.
void expect_ddp_frames(const CommandResult& r) {
  const std::vector<PrintedFrame> frames = printed_frames(r.output);
  const PrintedFrame* back = find_frame(frames, "backward");
  const PrintedFrame* reduce = find_frame(frames, "all-reduce the gradients");
  ASSERT_NE(back, nullptr) << "no frame 'backward'\n" << r.output;
  ASSERT_NE(reduce, nullptr) << "no frame 'all-reduce the gradients'\n" << r.output;
  EXPECT_LT(back, reduce) << r.output;
  EXPECT_EQ(back->phase, "backward") << back->header;
  EXPECT_EQ(reduce->phase, "reduce") << reduce->header;
  EXPECT_TRUE(reduce->note("all-reduce (average): every rank now holds the same gradients")) << r.output;
  EXPECT_TRUE(reduce->note("all_reduce [0, 809600): 1214400 elements, 4857600 bytes per rank, ranks 0-3")) << r.output;
  EXPECT_TRUE(has(r, "The frame's all_reduce: 4857600 bytes\nper rank = world.stats() over this step, 4857600 bytes"))
      << r.output;
  ASSERT_EQ(back->ranks(), 4) << r.output;
  ASSERT_EQ(reduce->ranks(), 4) << r.output;
  ASSERT_EQ(back->owners.size(), 5u) << r.output;  // the 5 buckets of beat 5
  for (std::size_t b = 0; b < 5; ++b) {  // DDP shards nothing: the same character on every cell of every rank
    expect_cells(*back, "params", b, '=', '=');
    expect_cells(*back, "grads", b, '~', '~');
    expect_cells(*reduce, "params", b, '=', '=');
    expect_cells(*reduce, "grads", b, '*', '*');
    expect_cells(*reduce, "optim", b, '=', '=');
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Lesson 01, and the options every lesson shares.

TEST(L01_Lesson, RunsQuickAndPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto --quick";
  CommandResult r = run_lesson("01", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_beats(r, 1, 6, 6);
  EXPECT_TRUE(has(r, "xt = x.transpose(0, 1) = Tensor(3, 2) f32 cpu  strides (1, 3)")) << r.output;
  EXPECT_TRUE(has(r, "same storage as x: yes")) << r.output;
  EXPECT_TRUE(has(r, "0.1 as bf16 = 0.100097656250  (bits 0x3dcd")) << r.output;
  EXPECT_TRUE(has(r, "= 3542016  (exact)")) << r.output;  // 768·768·4 + 768·4 + 768·768·2
  EXPECT_TRUE(has(r, "GFLOP/s")) << r.output;
  EXPECT_NEAR(number_after(r, R"(C\[3, 5\] =)"), number_after(r, R"(by hand \(a dot product in double\))"), 1e-3);
  expect_guide_figures("01", args, r.output);
}

TEST(L01_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("01"); }

// The guide checks can fail: names that once were right, and figures the lesson does not print.
TEST(L01_Lesson, GuideChecksCatchWhatIsNotThere) {
  for (const char* gone : {"saved_activations.clear()", "L02_Lesson.RunsAuto", "L09_Nothing", "L05_T9_DDP.Nothing", "ctest -R L05_T9", "autograd/nothing.cpp",
                           "build/bin/lesson-99", "make lesson-99", "make nothing", "Tensor::nothing", "no_such_function"})
    EXPECT_FALSE(stale(gone).empty()) << gone;
  for (const char* there : {"release_saved", "w.grad()", "model.num_parameters()", "Tensor::view", "dist/ddp.{h,cpp}",
                            "ctest -R L03_Data", "L05_T5_DDP.BytesPerStepAreTheRingAllReduce...", "ctest -R L05_T1", "L06_T1_Partition.ShardsCutThroughParametersAndCoverEachElementOnce", "make lesson-05",
                            "make test-lesson-02", "build/bin/test-zero_mpi --gtest_filter='L05_DDP.*Buckets*'"})
    EXPECT_EQ(stale(there), "") << there;
  const std::vector<std::string> out = {"bucket 0:  198656 elements, 15 tensors: a ... b", "loss at init 4.1833, ln(V) = 4.1431"};
  EXPECT_TRUE(printed("bucket 0: 198656 elements ... b", out));
  EXPECT_TRUE(printed("loss at init 4.1833", out));
  EXPECT_FALSE(printed("loss at init 4.1834", out));
  EXPECT_FALSE(printed("b ... bucket 0", out));  // parts in order, on one line
}

TEST(L01_LessonOptions, UnknownOptionIsOneUsageErrorListingTheOptions) {
  for (const std::string bad : {"--bogus", "--bogus=3", "--Auto", "stray"}) {
    CommandResult r = run_lesson("01", "--auto " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
    const std::string named = bad.substr(0, bad.find('='));
    EXPECT_TRUE(has(r, "'" + named + "'")) << r.output;
    EXPECT_TRUE(has(r, "lesson-01 takes --auto, --quick, --beat N, --help")) << r.output;
    EXPECT_FALSE(has(r, "--- beat 1/")) << "ran although the command line was wrong:\n" << r.output;
  }
  // A lesson's own options are listed too, and a malformed value is the same kind of error.
  CommandResult r = run_lesson("03", "--auto --steps 10x");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(has(r, "--steps: needs a positive integer, got '10x'")) << r.output;
  EXPECT_TRUE(has(r, "--data FILE, --steps N, --prompt TEXT, --help")) << r.output;
  EXPECT_EQ(run_lesson("03", "--steps 0").exit_code, 2);
  EXPECT_EQ(run_lesson("02", "--steps 5").exit_code, 2);  // lesson 02 trains nothing: no --steps
}

TEST(L01_LessonOptions, HelpListsEveryOptionWithItsDefault) {
  CommandResult r = run_lesson("03", "--help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* want : {"--auto", "--quick", "--beat N", "--data FILE", "default: datasets/kjv.txt", "--steps N",
                           "default: 200; --quick: 20", "--prompt TEXT", "default: And God said", "--help"})
    EXPECT_TRUE(has(r, want)) << want << "\n" << r.output;
  EXPECT_FALSE(has(r, "--- beat")) << r.output;
}

TEST(L01_LessonOptions, BeatOutOfRangeIsAUsageError) {
  for (const std::string n : {"0", "7", "-1", "x"}) {
    CommandResult r = run_lesson("01", "--auto --beat " + n);
    EXPECT_EQ(r.exit_code, 2) << n << ": " << r.output;
    EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
    EXPECT_TRUE(has(r, "--beat")) << r.output;
  }
  EXPECT_TRUE(has(run_lesson("01", "--beat 7"), "this lesson has beats 1..6"));
}

TEST(L01_LessonOptions, BeatNRunsTheEarlierBeatsSilentlyAndStartsThere) {
  // Lesson 02's beat 7 measures the memory of an MLP the earlier beats built: they ran, unseen.
  CommandResult r = run_lesson("02", "--auto --beat 7");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_beats(r, 7, 7, 7);
  EXPECT_TRUE(has(r, "(--beat 7: running beats 1-6 without showing them)")) << r.output;
  EXPECT_FALSE(has(r, "TanhBackward")) << r.output;  // beat 1's graph
  EXPECT_TRUE(has(r, "activation bytes held   4096 KiB")) << r.output;
  // Without --auto it stops at beat N: the end of the input there quits.
  r = run_lesson("01", "--beat 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_beats(r, 3, 3, 6);
  EXPECT_FALSE(has(r, "--- beat 4/6")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 3/6)")) << r.output;
}

TEST(L01_LessonOptions, QAtThePromptQuitsCleanly) {
  CommandResult r = run_lesson_typing("01", "", "q\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 1/6:")) << r.output;
  EXPECT_TRUE(has(r, "[beat 1/6 done. Enter: next, q: quit]")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 1/6)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 2/6:")) << r.output;
  // Enter goes on, then q.
  r = run_lesson_typing("01", "", "\\nq\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 2/6:")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 2/6)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 3/6:")) << r.output;
}

// ---------------------------------------------------------------------------------------------------
// Lesson 02

TEST(L02_Lesson, RunsQuickAndPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto --quick";
  CommandResult r = run_lesson("02", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_beats(r, 1, 7, 7);
  EXPECT_TRUE(has(r, "TanhBackward")) << r.output;
  EXPECT_TRUE(has(r, "gradcheck(tanh(linear(x, W, b))): ok")) << r.output;
  EXPECT_TRUE(has(r, "(doubled)")) << r.output;
  // finite differences agree with autograd
  EXPECT_NEAR(number_after(r, R"(dy/dw\[2\]: numeric)"), number_after(r, R"(dy/dw\[2\]: numeric [-0-9.]+\s+autograd)"),
              1e-3);
  // hooks: the last layer's gradients are final first, the first layer's last
  const auto fc3 = r.output.find("hook 1: fc3."), fc1 = r.output.find("hook 5: fc1.");
  EXPECT_NE(fc3, std::string::npos) << r.output;
  EXPECT_NE(fc1, std::string::npos) << r.output;
  EXPECT_LT(fc3, fc1);
  EXPECT_EQ(number_after(r, "after backward:   activation bytes held"), 0) << r.output;
  expect_guide_figures("02", args, r.output);
}

TEST(L02_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("02"); }

// ---------------------------------------------------------------------------------------------------
// Lesson 03: --quick trains 20 steps, enough to see the loss leave ln(V).

TEST(L03_Lesson, RunsQuickLearnsAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  CommandResult r = run_lesson("03", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_beats(r, 1, 6, 6);
  EXPECT_TRUE(matches(r, R"(transformer\.h\.0\.attn\.c_attn\.weight\s+\(384, 128\))")) << r.output;
  EXPECT_TRUE(has(r, "(equal)")) << r.output;
  EXPECT_TRUE(has(r, "formula 124439808 = 124.4M")) << r.output;
  const double V = number_after(r, "vocabulary V =");
  ASSERT_GT(V, 1) << r.output;
  EXPECT_NEAR(number_after(r, "loss at init"), std::log(V), 0.1) << r.output;
  EXPECT_LT(number_after(r, "val loss"), std::log(V) - 0.5) << r.output;  // 20 steps learn the character frequencies
  EXPECT_TRUE(has(r, "the number lesson 05 (DDP) will compare against")) << r.output;
  expect_guide_figures("03", args, r.output);
}

TEST(L03_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("03"); }

TEST(L03_Lesson, MissingDataSaysHowToMakeIt) {
  CommandResult r = run_lesson("03", "--auto --quick --data /nonexistent/kjv.txt");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(has(r, "make data")) << r.output;
}

// Another text: "And God said" is not in its vocabulary (no 'A', no 'G'), so the sample's prompt comes
// from the text itself, and the lesson runs to its end.
TEST(L03_Lesson, DataWithoutTheDefaultPromptsCharactersRunsToTheEnd) {
  mt_test::TempDir tmp;
  std::string text;
  for (int i = 0; i < 60; ++i) text += "the lamb was slain in glory and it shone over the hills of water\n";
  const std::string file = tmp.write("odd.txt", text);
  CommandResult r = run_lesson("03", "--auto --quick --steps 1 --data " + file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "the prompt is the start of the val split")) << r.output;
  EXPECT_TRUE(has(r, "final after 1 steps")) << r.output;
  EXPECT_TRUE(has(r, "Lesson 03 done.")) << r.output;
  // A --prompt outside the vocabulary is the student's to fix: a usage error, before any training.
  r = run_lesson("03", "--auto --quick --steps 1 --prompt 'And God' --data " + file);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(has(r, "--prompt 'And God': character 'A'")) << r.output;
  EXPECT_FALSE(has(r, "step    1")) << r.output;
  // ... and one inside it is used.
  r = run_lesson("03", "--auto --quick --steps 1 --prompt 'the lamb' --beat 6 --data " + file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "sample after \"the lamb\"")) << r.output;
}

// ---------------------------------------------------------------------------------------------------
// Lesson 05 runs under mpirun with 4 ranks (oversubscribed on small machines; root allowed).

TEST(L05_Lesson, RunsQuickOn4RanksAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  CommandResult r = run_lesson("05", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_beats(r, 1, 9, 9);
  // rank 0's weights everywhere, whatever each rank drew
  std::smatch m;
  const std::regex rank0(R"(rank 0: wte\[0,0\] from its own seed \S+ -> after broadcast (\S+))");
  ASSERT_TRUE(std::regex_search(r.output, m, rank0)) << r.output;
  for (int rank = 1; rank < 4; ++rank)
    EXPECT_TRUE(matches(r, "rank " + std::to_string(rank) + R"(: wte\[0,0\] .* -> after broadcast )" +
                               std::regex_replace(m[1].str(), std::regex(R"([.+])"), R"(\$&)")))
        << r.output;
  // the ring, step by step: rank r ends the reduce-scatter with chunk r summed over the 4 ranks
  const std::vector<std::string> lines = lines_of(r.output);
  EXPECT_TRUE(printed("rank 3: sends chunk 0 [ 1110 2220] to rank 0 | gets chunk 3 [ 777 888] + own [ 7000 8000] = "
                      "[ 7777 8888]",
                      lines))
      << r.output;
  EXPECT_TRUE(printed("every rank now holds [ 1111 2222 3333 4444 5555 6666 7777 8888]: the sum on 4 of 4 ranks", lines))
      << r.output;
  // what the counters measured is the formula, in the ring beats and for DDP's step
  const std::regex measured_re(R"(measured (\d+) bytes per rank)"), formula_re(R"(formula [^=\n]*= (\d+) bytes)");
  std::vector<long long> measured, formula;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), measured_re); it != std::sregex_iterator(); ++it)
    measured.push_back(std::stoll((*it)[1]));
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), formula_re); it != std::sregex_iterator(); ++it)
    formula.push_back(std::stoll((*it)[1]));
  ASSERT_EQ(measured.size(), 2u) << r.output;
  ASSERT_EQ(formula.size(), 2u) << r.output;
  EXPECT_EQ(measured[0], formula[0]) << r.output;  // 2(N-1)/N * 8 * 4 = 48
  EXPECT_EQ(measured[1], formula[1]) << r.output;  // 2(N-1)/N * psi * 4 = 4857600
  EXPECT_EQ(formula[0], 48);
  EXPECT_EQ(formula[1], 4857600);
  EXPECT_TRUE(has(r, "(equal: measured = recorded = formula)")) << r.output;
  EXPECT_TRUE(has(r, "bucket 0:  198656 elements, 15 tensors: transformer.ln_f.bias")) << r.output;
  EXPECT_TRUE(has(r, "backward end")) << r.output;
  expect_ddp_frames(r);
  EXPECT_LT(number_after(r, "largest relative loss difference over 10 steps:"), 1e-5) << r.output;
  EXPECT_LT(number_after(r, "4 ranks: train loss"), 4.0) << r.output;
  expect_guide_figures("05", args, r.output);
}

TEST(L05_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("05"); }

TEST(L05_Lesson, OneRankExplainsHowToStartIt) {
  CommandResult r = mt_test::run_command(kBin + "/lesson-05 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "mpirun -np 4 build/bin/lesson-05")) << r.output;
  EXPECT_TRUE(has(r, "make lesson-05")) << r.output;
}

// Only rank 0 reads the terminal; what it read reaches every rank, so all go on or quit together (a
// rank left behind would wait in its next collective until the job's timeout). Through the ring's
// beats (2-4), which are cheap: `make sanitize` runs them here (the whole quick run is left out there).
TEST(L05_Lesson, QOnRankZeroQuitsEveryRank) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  CommandResult r = run_lesson_typing("05", "--quick", "\\n\\n\\nq\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 4/9:")) << r.output;
  EXPECT_TRUE(has(r, "all-reduce: measured 48 bytes per rank")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 4/9)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 5/9:")) << r.output;
}

TEST(L05_Lesson, UsageErrorUnderMpirunIsOneLineAndExit2) {
  CommandResult r = run_lesson("05", "--auto --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;  // rank 0 says it, for every rank
  EXPECT_TRUE(has(r, "unknown option '--bogus'")) << r.output;
  EXPECT_TRUE(has(r, "--data FILE, --steps N, --bucket N, --help")) << r.output;
}

// ---------------------------------------------------------------------------------------------------
// The full runs (lesson 03: 200 steps, lesson 05: 200 steps on 4 ranks and again on one): what their
// guides quote from them. Minutes each on 2 cores, so not in ctest; run them after changing a lesson
// or the code under it:
//   build/bin/test-lessons --gtest_also_run_disabled_tests --gtest_filter='*FullRun*'

TEST(L03_Lesson, DISABLED_FullRunPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto";
  CommandResult r = run_lesson("03", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_guide_figures("03", args, r.output);
}

TEST(L05_Lesson, DISABLED_FullRunPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto";
  CommandResult r = run_lesson("05", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_guide_figures("05", args, r.output);
}

// ---------------------------------------------------------------------------------------------------
// Lesson 08: a block's saved activations measured = the formula to the byte, checkpoint's gradients and
// the checkpointed training's losses bit-identical to the plain ones.

TEST(L08_Lesson, RunsQuickAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  CommandResult r = run_lesson("08", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_beats(r, 1, 4, 4);
  EXPECT_TRUE(has(r, "(= measured)")) << r.output;
  EXPECT_FALSE(has(r, "DIFFERENT")) << r.output;
  EXPECT_TRUE(has(r, "bit-identical to the plain run")) << r.output;
  EXPECT_TRUE(has(r, "all 20 losses: bit-identical")) << r.output;
  expect_guide_figures("08", args, r.output);
}

TEST(L08_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("08"); }
