// The lesson binaries, run as CI runs them: `build/bin/lesson-NN --auto`. Each must exit 0 and print
// the numbers its beats promise (the lesson READMEs quote them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include "test_util.h"

namespace {

using LessonRun = mt_test::CommandResult;
const auto run_lesson = mt_test::run_command;

bool has(const LessonRun& r, const std::string& text) { return r.output.find(text) != std::string::npos; }
bool matches(const LessonRun& r, const std::string& pattern) { return std::regex_search(r.output, std::regex(pattern)); }

/// The first number after `label` (a regex prefix) in the output; NaN if absent.
double number_after(const LessonRun& r, const std::string& label) {
  std::smatch m;
  if (std::regex_search(r.output, m, std::regex(label + R"(\s*([-+0-9.eE]+))"))) return std::stod(m[1]);
  return std::nan("");
}

const std::string kBin = MT_BIN_DIR;
const std::string kData = std::string(MT_SOURCE_DIR) + "/datasets/kjv.txt";

}  // namespace

TEST(L01_Lesson, RunsAuto) {
  LessonRun r = run_lesson(kBin + "/lesson-01 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "xt = x.transpose(0, 1) = Tensor(3, 2) f32 cpu  strides (1, 3)")) << r.output;
  EXPECT_TRUE(has(r, "same storage as x: yes")) << r.output;
  EXPECT_TRUE(has(r, "0.1 as bf16 = 0.100097656250  (bits 0x3dcd")) << r.output;
  EXPECT_TRUE(has(r, "f32 4194304 bytes, bf16 2097152 bytes")) << r.output;
  EXPECT_TRUE(has(r, "= 3542016  (exact)")) << r.output;  // 768·768·4 + 768·4 + 768·768·2
  EXPECT_TRUE(has(r, "GFLOP/s")) << r.output;
  EXPECT_NEAR(number_after(r, R"(C\[3, 5\] =)"), number_after(r, R"(by hand \(a dot product in double\))"), 1e-3);
}

TEST(L02_Lesson, RunsAuto) {
  LessonRun r = run_lesson(kBin + "/lesson-02 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
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
}

TEST(L03_Lesson, RunsAutoAndLearns) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  LessonRun r = run_lesson(kBin + "/lesson-03 --auto --steps 30 --data " + kData);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(matches(r, R"(transformer\.h\.0\.attn\.c_attn\.weight\s+\(384, 128\))")) << r.output;
  EXPECT_TRUE(has(r, "(equal)")) << r.output;
  EXPECT_TRUE(has(r, "formula 124439808 = 124.4M")) << r.output;
  const double V = number_after(r, "vocabulary V =");
  ASSERT_GT(V, 1) << r.output;
  EXPECT_NEAR(number_after(r, "loss at init"), std::log(V), 0.1) << r.output;
  const double val = number_after(r, "val loss");
  EXPECT_LT(val, std::log(V) - 0.5) << r.output;  // 30 steps already learn the character frequencies
  EXPECT_TRUE(has(r, "the number lesson 05 (DDP) will compare against")) << r.output;
}

TEST(L03_Lesson, MissingDataSaysHowToMakeIt) {
  LessonRun r = run_lesson(kBin + "/lesson-03 --auto --data /nonexistent/kjv.txt");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "make data")) << r.output;
}

// Lesson 05 runs under mpirun with 4 ranks (oversubscribed on small machines; root allowed).
TEST(L05_Lesson, RunsAutoOn4Ranks) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  LessonRun r = run_lesson("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe "
                           "--bind-to none -np 4 " + kBin + "/lesson-05 --auto --steps 10 --data " + kData);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // rank 0's weights everywhere, whatever each rank drew
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(rank 0: wte\[0,0\] from its own seed \S+ -> after broadcast (\S+))")))
      << r.output;
  for (int rank = 1; rank < 4; ++rank)
    EXPECT_TRUE(matches(r, "rank " + std::to_string(rank) + R"(: wte\[0,0\] .* -> after broadcast )" +
                               std::regex_replace(m[1].str(), std::regex(R"([.+])"), R"(\$&)")))
        << r.output;
  EXPECT_TRUE(matches(r, R"(reduce_bucket_size = 200000 elements -> 5 buckets)")) << r.output;
  EXPECT_TRUE(has(r, "bucket 0:  198656 elements, 15 tensors: transformer.ln_f.bias")) << r.output;
  EXPECT_TRUE(has(r, "formula 2*(4-1)/4 * 809600 * 4 = 4857600 bytes  (equal)")) << r.output;
  EXPECT_TRUE(matches(r, R"(measured \(world.stats\(\), one step\): 4857600 bytes in 5 all-reduces)")) << r.output;
  EXPECT_TRUE(has(r, "backward end")) << r.output;
  EXPECT_LT(number_after(r, "largest relative loss difference over 10 steps:"), 1e-5) << r.output;
  EXPECT_LT(number_after(r, "4 ranks: train loss"), 4.0) << r.output;
}

TEST(L05_Lesson, OneRankExplainsHowToStartIt) {
  LessonRun r = run_lesson(kBin + "/lesson-05 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "mpirun -np 4 build/bin/lesson-05")) << r.output;
}
