// Lesson 11 (ZeRO-Infinity), run as a student runs it: `lesson-11 --auto --quick` under mpirun on 4 ranks from the
// repository root (naming lesson-11 here makes test-lessons depend on it). It must exit 0 and print what its beats
// promise — ZeRO-Offload out of memory on every rank at the same allocation where offload_param fits; every pool,
// copy and disk figure equal to runtime::exact_offload_states on every rank; the tiled step's host peak
// (12·slots + 4)·t whatever the model; the reduction's comm peak the same at two depths and under
// runtime::reduction_buffer_bytes; the NVMe run's losses those of plain ZeRO-3; the swap's folder gone — and every
// line its guide quotes.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "lesson_util.h"
#include "test_util.h"

namespace {

using namespace lesson_test;

/// build/bin/lesson-11 with `args` under mpirun on 4 ranks from the repository root, `typed` on its input.
CommandResult run11(const std::string& args, const std::string& typed = "") {
  return typed.empty() ? run_lesson("11", args) : run_lesson_typing("11", args, typed);
}

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

int count(const CommandResult& r, const std::string& text) {
  int n = 0;
  for (std::size_t at = r.output.find(text); at != std::string::npos; at = r.output.find(text, at + 1)) ++n;
  return n;
}

long long number(const std::ssub_match& m) { return std::stoll(m.str()); }

// Beat 4's rows: L, Ψ/N, tile, tiles, slots, host optim, optim_temp, the formula, disk read.
void expect_tiles_bound_the_host(const std::string& out) {
  const std::regex row(R"(\n  (\d+) +(\d+) +(\d+) +(\d+) +([13]) +(\d+) +(\d+) +(\d+) \(= peak\) +(\d+) +\d+%)");
  int rows = 0;
  long long baby_peak = -1, deeper_peak = -1, baby_read = -1, deeper_read = -1;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), row); it != std::sregex_iterator(); ++it, ++rows) {
    const std::smatch& m = *it;
    const long long L = number(m[1]), shard = number(m[2]), tile = number(m[3]), tiles = number(m[4]), slots = number(m[5]);
    EXPECT_GE(tiles, 8) << m.str() << ": each rank's shard is 8 tiles or more";
    EXPECT_EQ(tiles, (shard + tile - 1) / tile) << m.str();
    EXPECT_EQ(number(m[6]), slots * 12 * tile) << m.str() << ": a state buffer of master, m, v per tile in flight";
    EXPECT_EQ(number(m[7]), 4 * tile) << m.str() << ": one tile's f32 gradient";
    EXPECT_EQ(number(m[8]), number(m[6]) + number(m[7])) << m.str();
    if (tile == 20000 && slots == 1) {  // the same tile at L = 4 and L = 8
      (L == 4 ? baby_peak : deeper_peak) = number(m[8]);
      (L == 4 ? baby_read : deeper_read) = number(m[9]);
    }
  }
  EXPECT_EQ(rows, 5) << "tiles of 5000, 10000, 20000, 20000 pipelined, and the deeper GPT\n" << out;
  EXPECT_EQ(baby_peak, deeper_peak) << "the host's peak grows with the tile, not with the model\n" << out;
  EXPECT_GT(deeper_read, baby_read) << "the disk's traffic does grow with it\n" << out;
}

// Beat 5's rows: L, C, psi, the largest unit, the comm peak against the bound, and a whole unit's bytes.
void expect_constant_buffers(const std::string& out) {
  std::smatch b;
  ASSERT_TRUE(std::regex_search(out, b, std::regex(R"(c = 2 · 4 · 5 · 5000 = (\d+) bytes)"))) << out;
  const long long bound = number(b[1]);
  const std::regex row(R"(\n  (\d+) +(\d+) +(\d+) +(\d+) +(\d+) bytes <= bound +(\d+) bytes)");
  std::vector<long long> peaks;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), row); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    EXPECT_LE(number(m[5]), bound) << m.str();
    EXPECT_GT(number(m[4]), 20000) << m.str() << ": a unit bigger than reduce_bucket_size, reduced in chunks";
    EXPECT_GT(number(m[6]), bound) << m.str() << ": a whole unit would not fit the bound";
    peaks.push_back(number(m[5]));
  }
  ASSERT_EQ(peaks.size(), 3u) << "L = 2 and 8 at C = 128, then C = 256\n" << out;
  EXPECT_EQ(peaks[0], peaks[1]) << "the same comm peak at both depths\n" << out;
}

// Beat 6's closing table: the NVMe run's measured bytes equal runtime::exact_offload_states' in every row.
void expect_closing_table(const std::string& out) {
  const std::regex row(R"(\n  ([a-z][a-z0-9 ]*?) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)  )");
  int rows = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), row); it != std::sregex_iterator(); ++it, ++rows)
    EXPECT_EQ((*it)[4], (*it)[5]) << (*it)[1] << ": measured vs exact";
  EXPECT_EQ(rows, 11) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(max relative difference of the 10 losses: ([0-9.e+-]+),)"))) << out;
  EXPECT_LE(std::stod(m[1]), 1e-6) << out;
}

TEST(L11_Lesson, RunsQuickOn4RanksAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  const CommandResult r = run11(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int k = 1; k <= 6; ++k) EXPECT_TRUE(has(r, "--- beat " + std::to_string(k) + "/6: ")) << k << "\n" << r.output;
  EXPECT_TRUE(has(r, "Lesson 11 done.")) << r.output;

  // Beat 1: 4 placements x 4 sizes, each with the nodes it needs.
  EXPECT_EQ(count(r, " (N = "), 16) << r.output;
  // Beat 2: ZeRO-Offload runs out of the card on every rank, the real error shown; offload_param fits.
  EXPECT_EQ(count(r, "out of memory on 4 of 4 ranks in step "), 1) << r.output;
  EXPECT_TRUE(has(r, "every rank at the same allocation with the same bytes in use")) << r.output;
  EXPECT_TRUE(has(r, "out of memory on sim of rank 0: ")) << r.output;
  EXPECT_TRUE(has(r, "this run: ZeRO stage 3 + offload_optimizer, f32")) << r.output;
  EXPECT_EQ(count(r, "fits: the device's peak"), 1) << r.output;
  // Beats 2-4: every pool and transfer equal to its exact prediction, on every rank.
  EXPECT_EQ(count(r, "(= exact)"), 7 + 9) << r.output;
  EXPECT_EQ(count(r, "every rank: measured = exact, to the byte: yes; the same bytes on every rank: yes"), 3) << r.output;
  EXPECT_FALSE(has(r, "DIFFERENT")) << r.output;
  EXPECT_FALSE(std::regex_search(r.output, std::regex(R"(\bNO\b|BOUND|ABOVE)"))) << r.output;
  expect_tiles_bound_the_host(r.output);
  expect_constant_buffers(r.output);
  EXPECT_TRUE(has(r, "the comm peak at L = 2 and L = 8 the same, every run under the bound, the same on every rank: yes"))
      << r.output;
  // Beat 6: the losses of plain ZeRO-3, every pool as predicted, and nothing left on disk.
  expect_closing_table(r.output);
  EXPECT_TRUE(has(r, "measured = exact, every pool and transfer, on every rank: ZeRO-3 yes, ZeRO-3 + NVMe yes")) << r.output;
  EXPECT_TRUE(has(r, "the swap's temporary folder removed: yes")) << r.output;
  std::smatch path;
  ASSERT_TRUE(std::regex_search(r.output, path, std::regex(R"re("nvme_path":"([^"]+)")re"))) << r.output;
  EXPECT_FALSE(std::filesystem::exists(path[1].str())) << path[1];
  expect_guide_blocks("11", args, r.output);
}

TEST(L11_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("11"); }

TEST(L11_Lesson, OneRankExplainsHowToStartIt) {
  const CommandResult r = mt_test::run_command(kBin + "/lesson-11 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "mpirun -np 4 build/bin/lesson-11")) << r.output;
  EXPECT_TRUE(has(r, "make lesson-11")) << r.output;
}

TEST(L11_Lesson, UnknownOptionUnderMpirunIsOneLineAndExit2) {
  const CommandResult r = run11("--auto --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;  // rank 0 says it, for every rank
  EXPECT_TRUE(has(r, "unknown option '--bogus'")) << r.output;
  EXPECT_TRUE(has(r, "--data FILE, --steps N, --device-memory SIZE, --help")) << r.output;
}

TEST(L11_Lesson, ACardThatIsNotASizeIsOneLineAndExit2) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const CommandResult r = run11("--auto --device-memory lots");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(has(r, "--device-memory: 'lots' is not a size")) << r.output;
}

// Only rank 0 reads the terminal; q there ends every rank, after beat 1.
TEST(L11_Lesson, QOnRankZeroQuitsEveryRank) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const CommandResult r = run11("--quick", "q\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 1/6:")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 1/6)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 2/6:")) << r.output;
}

// The full run (200 steps of each training run of beat 6, a few minutes here): what the guide quotes from it.
// build/bin/test-lessons --gtest_also_run_disabled_tests --gtest_filter='L11_*FullRun*'
TEST(L11_Lesson, DISABLED_FullRunPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto";
  const CommandResult r = run11(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "measured = exact, every pool and transfer, on every rank: ZeRO-3 yes, ZeRO-3 + NVMe yes")) << r.output;
  EXPECT_TRUE(has(r, "within fp32's 1e-6")) << r.output;
  expect_guide_blocks("11", args, r.output);
}

}  // namespace
