// Deterministic fuzzing of every parser that reads bytes from outside (fuzz_targets.h), one test per
// target: its seeds, then MT_FUZZ_INPUTS (default 2000) mutated inputs from a fixed seed. Each input
// must be accepted or rejected with the parser's one documented error, within a second
// (MT_FUZZ_INPUT_LIMIT_S). Inputs that
// break that are written to build/fuzz-findings/<target>-<index>.bin; replay one with
//   MT_FUZZ_REPLAY=build/fuzz-findings/config-1234.bin build/bin/test-fuzz --gtest_filter=L03_Fuzz.Config
// `make fuzz` runs the same targets under libFuzzer for as long as you like.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fuzz/fuzz_driver.h"
#include "fuzz/fuzz_mutator.h"

using namespace mt_fuzz;

namespace {

const std::string kFindingsDir = std::string(MT_BIN_DIR) + "/../fuzz-findings";

std::size_t env_count(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : fallback;
}

void fuzz_target(const char* name) {
  const Target& t = target(name);
  if (const char* file = std::getenv("MT_FUZZ_REPLAY"); file && *file) {
    Outcome out;
    const std::string broke = replay(t, file, &out);
    EXPECT_EQ(broke, "") << "replaying " << file;
    if (broke.empty() && !out.accepted) std::printf("  error: %s\n", out.error.c_str());
    return;
  }
  CampaignOptions o;
  o.mutated_inputs = env_count("MT_FUZZ_INPUTS", 2000);
  if (const char* v = std::getenv("MT_FUZZ_INPUT_LIMIT_S"); v && *v) o.input_limit_s = std::strtod(v, nullptr);
  o.findings_dir = kFindingsDir;
  const CampaignReport rep = run_campaign(t, o);
  std::printf("%s\n", rep.summary(t.name).c_str());
  EXPECT_GE(rep.seeds + rep.mutated, 2000u);
  for (std::size_t i = 0; i < rep.findings.size() && i < 10; ++i) {
    const Finding& f = rep.findings[i];
    std::ifstream in(f.file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ADD_FAILURE() << "input #" << f.index << " of target " << t.name << ": " << f.what << "\n  saved in " << f.file
                  << "\n  bytes: \"" << escape_bytes(bytes) << "\"";
  }
  EXPECT_EQ(rep.findings.size(), 0u) << rep.summary(t.name);
}

// A target with planted bugs, to prove the driver catches each kind of finding.
Outcome planted(std::string_view in) {
  if (in == "WRONG-TYPE") throw std::out_of_range("planted");
  if (in == "HUGE-MESSAGE") throw FuzzFinding("planted");
  if (in == "SLOW") std::this_thread::sleep_for(std::chrono::milliseconds(600));
  if (in == "HANG")
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return {in.size() % 2 == 0, "odd"};
}
std::vector<std::string> planted_seeds() { return {"ok", "WRONG-TYPE", "HUGE-MESSAGE", "SLOW"}; }
const Target kPlanted{"planted", "planted: no exception", InputKind::text, planted, planted_seeds};

}  // namespace

TEST(L03_Fuzz, Config) { fuzz_target("config"); }
TEST(L03_Fuzz, Safetensors) { fuzz_target("safetensors"); }
TEST(L03_Fuzz, Checkpoint) { fuzz_target("checkpoint"); }
TEST(L03_Fuzz, OptimState) { fuzz_target("optim_state"); }
TEST(L03_Fuzz, Manifest) { fuzz_target("manifest"); }
TEST(L06_Fuzz, ShardedManifest) { fuzz_target("sharded_manifest"); }
TEST(L07_Fuzz, Frames) { fuzz_target("frames"); }
TEST(L03_Fuzz, Text) { fuzz_target("text"); }

TEST(L03_Fuzz, MutationsAreAFunctionOfTheIndex) {
  const std::vector<std::string> seeds = {R"({"a": [1, 2.5, "x"], "b": {"c": true}})", "{}"};
  int differ = 0;
  for (std::uint64_t i = 0; i < 200; ++i) {
    const std::string a = mutate(seeds, InputKind::json, 42, i);
    EXPECT_EQ(a, mutate(seeds, InputKind::json, 42, i)) << i;
    differ += a != mutate(seeds, InputKind::json, 42, i + 1);
    EXPECT_LE(a.size(), std::size_t{1} << 18);
  }
  EXPECT_GT(differ, 190);
  // The safetensors mutations keep the header length consistent often enough to get past it.
  std::string st(8, '\0');
  st[0] = 2;
  st += "{}";
  int consistent = 0;
  for (std::uint64_t i = 0; i < 200; ++i) {
    const std::string m = mutate({st}, InputKind::safetensors, 7, i);
    std::uint64_t n = 0;
    for (int b = 7; b >= 0 && m.size() >= 8; --b) n = (n << 8) | static_cast<unsigned char>(m[static_cast<std::size_t>(b)]);
    consistent += m.size() >= 8 && n <= m.size() - 8;
  }
  EXPECT_GT(consistent, 60);
}

TEST(L03_Fuzz, DriverReportsEachKindOfFindingWithAReplayableInput) {
  CampaignOptions o;
  o.mutated_inputs = 20;
  o.input_limit_s = 0.25;
  o.findings_dir = kFindingsDir + "/self-test";
  const CampaignReport rep = run_campaign(kPlanted, o);
  EXPECT_EQ(rep.seeds + rep.mutated, 24u);
  // Seed 0 ("ok") is accepted; seeds 1-3 are findings (a mutated input may add more).
  auto finding = [&](std::size_t index) -> const Finding* {
    for (const Finding& f : rep.findings)
      if (f.index == index) return &f;
    return nullptr;
  };
  EXPECT_EQ(finding(0), nullptr);
  const Finding* wrong_type = finding(1);
  const Finding* planted_finding = finding(2);
  const Finding* slow = finding(3);
  ASSERT_TRUE(wrong_type && planted_finding && slow) << rep.summary("planted");
  EXPECT_NE(wrong_type->what.find("an exception of type std::out_of_range escaped"), std::string::npos)
      << wrong_type->what;
  EXPECT_EQ(planted_finding->what, "planted");
  EXPECT_NE(slow->what.find("s per input"), std::string::npos) << slow->what;
  // The saved inputs reproduce them.
  for (const Finding* f : {wrong_type, planted_finding, slow})
    EXPECT_NE(replay(kPlanted, f->file, nullptr, 0.25), "") << f->file;
  EXPECT_EQ(replay(kPlanted, planted_finding->file), "planted");
  std::filesystem::remove_all(o.findings_dir);
}

TEST(L03_Fuzz, DriverEndsAHangAndSavesTheInput) {
  const std::string dir = kFindingsDir + "/self-test-hang";
  std::filesystem::remove_all(dir);
  const Target hang{"hang", "planted", InputKind::text, planted, [] { return std::vector<std::string>{"ok", "HANG"}; }};
  CampaignOptions o;
  o.mutated_inputs = 0;
  o.hang_limit_s = 0.5;
  o.findings_dir = dir;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_campaign(hang, o), ::testing::ExitedWithCode(3), "HANG in target hang.*hang-1.bin");
  std::ifstream in(dir + "/hang-1.bin", std::ios::binary);
  const std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(saved, "HANG");
  std::filesystem::remove_all(dir);
}
