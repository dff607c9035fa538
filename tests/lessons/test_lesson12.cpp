// Lesson 12 (Gemini), run as a student runs it: `lesson-12 --auto --quick` under mpirun on 4 ranks from the
// repository root (naming lesson-12 here makes test-lessons depend on it). It must exit 0 and print what its beats
// promise — every copy up and down equal to its formula, on every rank; the chunks of one size with at least L + 2 of
// them; the tensors' states following the hooks and the gathers the rules predict; the warm-up's largest period peak
// the report's warmup_non_model_peak; OPT never loading more than LRU; Gemini auto's h2d = shard bytes × (loads +
// refreshes + uncached gathers); DDP and ZeRO-3 out of memory on every rank where Gemini auto trains, with ZeRO-3's
// losses — and every line its guide quotes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "lesson_util.h"
#include "test_util.h"

namespace {

using namespace lesson_test;

/// build/bin/lesson-12 with `args` under mpirun on 4 ranks from the repository root, `typed` on its input. (Spelled
/// out here: lesson_util.h's runs_on_ranks, behind run_lesson, does not list lesson 12.)
CommandResult run12(const std::string& args, const std::string& typed = "") {
  const std::string command = kMpirun + kBin + "/lesson-12 " + args;
  return mt_test::run_command("cd " + kSource + " && " +
                              (typed.empty() ? command : "(printf '" + typed + "' | " + command + ")"));
}

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

int count(const std::string& out, const std::string& text) {
  int n = 0;
  for (std::size_t at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) ++n;
  return n;
}

long long number(const std::ssub_match& m) { return std::stoll(m.str()); }

/// The text of beat k (from its heading to the next one's).
std::string beat(const std::string& out, int k) {
  const std::size_t from = out.find("--- beat " + std::to_string(k) + "/6: ");
  if (from == std::string::npos) return "";
  const std::size_t to = out.find("--- beat " + std::to_string(k + 1) + "/6: ", from);
  return out.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

// Beat 1: offload_param's 2A·P·Ψ/N, Gemini static's gathers × shard, Gemini auto's refresh, each = its formula.
void expect_static_offload_wastes(const std::string& b1) {
  EXPECT_EQ(count(b1, "(= formula)"), 3) << b1;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(b1, m, std::regex(R"(ZeRO-3 \+ offload_param cpu +(\d+) )"))) << b1;
  const long long zero_infinity = number(m[1]);
  ASSERT_TRUE(std::regex_search(b1, m, std::regex(R"(Gemini auto, no capacity limit +(\d+) )"))) << b1;
  EXPECT_LT(number(m[1]) * 4, zero_infinity) << "with room for every shard auto moves a fraction of it\n" << b1;
}

// Beat 2: the chunk table (one size, size = used + waste, at least L + 2 chunks) and the states at two moments.
void expect_chunks_and_states(const std::string& b2) {
  EXPECT_NE(b2.find("1 chunk of 809600"), std::string::npos) << "Colossal-AI's defaults: one chunk\n" << b2;
  EXPECT_NE(b2.find("kept gathered on every rank: yes"), std::string::npos) << b2;
  const std::regex chunk_row(R"(\n  (\d+) +(\d+) +(\d+) +(\d+)  [a-z])");
  std::set<long long> sizes;
  int chunks = 0;
  for (auto it = std::sregex_iterator(b2.begin(), b2.end(), chunk_row); it != std::sregex_iterator(); ++it, ++chunks) {
    const std::smatch& m = *it;
    EXPECT_EQ(number(m[1]), chunks) << m.str();
    EXPECT_EQ(number(m[2]), number(m[3]) + number(m[4])) << m.str() << ": size = used + waste";
    sizes.insert(number(m[2]));
  }
  EXPECT_GE(chunks, 4 + 2) << "at least L + 2 chunks\n" << b2;
  EXPECT_EQ(sizes.size(), 1u) << "the search packs into chunks of one size\n" << b2;

  // The two state tables: chunk, the parts it holds, FREE COMPUTE HOLD HOLD_AFTER_BWD READY_FOR_REDUCE, gathered.
  const std::size_t backward = b2.find("block 0's pre-backward");
  ASSERT_NE(backward, std::string::npos) << b2;
  const std::regex state_row(R"(\n  (\d+) +([a-z0-9+]+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)  (yes|-))");
  int rows[2] = {0, 0};
  for (auto it = std::sregex_iterator(b2.begin(), b2.end(), state_row); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    const bool in_backward = static_cast<std::size_t>(m.position()) > backward;
    ++rows[in_backward];
    const std::string holds = m[2];
    const long long free = number(m[3]), compute = number(m[4]), ready = number(m[7]);
    const bool gathered = m[8] == "yes";
    EXPECT_EQ(free, 0) << m.str() << ": every tensor of a placed chunk has its values";
    EXPECT_EQ(number(m[6]), 0) << m.str() << ": HOLD_AFTER_BWD lasts only inside the gradient hook";
    EXPECT_EQ(gathered, compute > 0 || ready > 0) << m.str() << ": gathered exactly while a tensor computes or waits";
    if (!in_backward && holds.find("h1") != std::string::npos) {
      EXPECT_GT(compute, 0) << m.str() << ": block 1 is about to compute";
    }
    if (!in_backward && (holds == "h2" || holds == "h3")) {
      EXPECT_EQ(compute + ready, 0) << m.str() << ": later blocks wait in HOLD, released";
    }
    if (in_backward && holds.find("h0") != std::string::npos) {
      EXPECT_GT(compute, 0) << m.str() << ": block 0's backward is about to compute";
    }
  }
  EXPECT_EQ(rows[0], rows[1]) << b2;
  EXPECT_GE(rows[0], 6) << b2;
  EXPECT_NE(b2.find("(= the rules)"), std::string::npos) << b2;
}

// Beat 3: ten moments, the largest period peak = warmup_non_model_peak, the room formula's arithmetic.
void expect_warmup_statistics(const std::string& b3) {
  EXPECT_NE(b3.find("34 uses in 10 moments"), std::string::npos) << b3;
  EXPECT_NE(b3.find("(= the largest)"), std::string::npos) << b3;
  const std::regex room(R"(before moment \d+ \([a-z0-9 -]+\): (\d+) × 0\.9 − (\d+) = (\d+) bytes)");
  int rooms = 0;
  for (auto it = std::sregex_iterator(b3.begin(), b3.end(), room); it != std::sregex_iterator(); ++it, ++rooms) {
    const std::smatch& m = *it;
    EXPECT_NEAR(static_cast<double>(number(m[3])), static_cast<double>(number(m[1])) * 0.9 - static_cast<double>(number(m[2])),
                1.0)
        << m.str();
  }
  EXPECT_EQ(rooms, 2) << b3;
}

// Beat 4: OPT <= LRU at every room, both = the chunks at a room for all; live evictions by OPT after the warm-up.
void expect_opt_against_lru(const std::string& b4) {
  const std::size_t table = b4.find("OPT loads LRU loads");
  ASSERT_NE(table, std::string::npos) << b4;
  const std::string rows_text = b4.substr(table, b4.find("OPT loads <= LRU") - table);
  const std::regex row(R"(\n  (\d+) +(\d+) +(\d+))");
  long long rooms = 0, last_opt = -1, last_lru = -1;
  for (auto it = std::sregex_iterator(rows_text.begin(), rows_text.end(), row); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    EXPECT_EQ(number(m[1]), ++rooms) << m.str();
    EXPECT_LE(number(m[2]), number(m[3])) << m.str() << ": OPT never loads more than LRU";
    if (last_opt >= 0) {
      EXPECT_LE(number(m[2]), last_opt) << m.str() << ": more room, no more loads";
    }
    last_opt = number(m[2]), last_lru = number(m[3]);
  }
  EXPECT_GE(rooms, 6) << b4;
  EXPECT_EQ(last_opt, rooms) << "room for every chunk: each loaded once\n" << b4;
  EXPECT_EQ(last_lru, rooms) << b4;
  EXPECT_NE(b4.find("OPT loads <= LRU loads at every room: yes"), std::string::npos) << b4;
  // The live runs: steps 2 and 3 of each card alike, and the tighter card evicting.
  const std::regex step(R"(\n  ([123]) +(\d+) +(\d+) +(\d+) +(\d+))");
  std::vector<std::vector<long long>> steps;
  for (auto it = std::sregex_iterator(b4.begin(), b4.end(), step); it != std::sregex_iterator(); ++it)
    steps.push_back({number((*it)[1]), number((*it)[2]), number((*it)[3]), number((*it)[4]), number((*it)[5])});
  ASSERT_EQ(steps.size(), 6u) << "3 steps on each of two cards\n" << b4;
  for (std::size_t card = 0; card < 2; ++card) {
    const auto& s2 = steps[3 * card + 1];
    const auto& s3 = steps[3 * card + 2];
    EXPECT_EQ(s2, std::vector<long long>({2, s3[1], s3[2], s3[3], s3[4]})) << "after the warm-up every step the same\n"
                                                                          << b4;
    EXPECT_EQ(s3[4], 0) << "after the warm-up every gather finds its shard cached\n" << b4;
    EXPECT_GT(s3[2], 0) << "both cards bind: steady_cuda_cap_ratio keeps a tenth free\n" << b4;
  }
  EXPECT_GT(steps[5][2], steps[2][2]) << "the smaller card evicts more\n" << b4;
  EXPECT_EQ(count(b4, "  gemini_evict  chunk "), 2) << b4;
  EXPECT_EQ(count(b4, ", the farthest (OPT); at use "), 2) << b4;
}

// Beat 5: six rows, every one = its formulas on every rank; auto's h2d equation.
void expect_bytes_moved(const std::string& b5) {
  EXPECT_EQ(count(b5, "(= formulas)"), 6) << b5;
  EXPECT_NE(b5.find("every rank: measured = formulas, to the byte: yes; the same h2d on every rank: yes"),
            std::string::npos)
      << b5;
  EXPECT_NE(b5.find("uncached_gathers) at every step of its three runs,\non every rank: yes"), std::string::npos) << b5;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(b5, m, std::regex(R"(= (\d+) × \((\d+) \+ (\d+) \+ (\d+)\))"))) << b5;
  const long long shard = number(m[1]), ups = number(m[2]) + number(m[3]) + number(m[4]);
  ASSERT_TRUE(std::regex_search(b5, m, std::regex(R"(Gemini auto, [0-9.]+ MiB card, step 3 +(\d+) )"))) << b5;
  EXPECT_EQ(number(m[1]), shard * ups) << b5;
}

// Beat 6: DDP and ZeRO-3 out of memory on the card; Gemini auto trains there with ZeRO-3's losses.
void expect_training(const std::string& b6) {
  EXPECT_EQ(count(b6, "out of memory on 4 of 4 ranks in step "), 2) << b6;
  EXPECT_EQ(count(b6, "every rank at the same allocation with the same bytes in use"), 2) << b6;
  EXPECT_NE(b6.find("this run: ZeRO stage 0 (DDP)"), std::string::npos) << b6;
  EXPECT_NE(b6.find("this run: ZeRO stage 3, f32"), std::string::npos) << b6;
  EXPECT_NE(b6.find("fits: 10 steps"), std::string::npos) << b6;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(b6, m, std::regex(R"(ZeRO-3 without a limit: .*the device's peak ([0-9.]+) MiB)"))) << b6;
  const double zero3_peak = std::stod(m[1]);
  ASSERT_TRUE(std::regex_search(b6, m, std::regex(R"(the device's peak ([0-9.]+) MiB of ([0-9.]+) MiB)"))) << b6;
  EXPECT_LE(std::stod(m[1]), std::stod(m[2])) << "Gemini under the card's capacity\n" << b6;
  EXPECT_LT(std::stod(m[2]), zero3_peak) << "a card smaller than ZeRO-3's peak\n" << b6;
  const std::regex loss_row(R"(\n +(\d+) +([0-9]+\.[0-9]+) +([0-9]+\.[0-9]+))");
  int rows = 0;
  for (auto it = std::sregex_iterator(b6.begin(), b6.end(), loss_row); it != std::sregex_iterator(); ++it, ++rows) {
    const double zero3 = std::stod((*it)[2]), gemini = std::stod((*it)[3]);
    EXPECT_LE(std::abs(gemini - zero3), 1e-4 * std::abs(zero3)) << (*it).str() << ": as printed, to 4 decimals";
  }
  EXPECT_EQ(rows, 2) << "steps 1 and 10\n" << b6;
  ASSERT_TRUE(std::regex_search(b6, m, std::regex(R"(max relative difference of the 10 losses: ([0-9.e+-]+),)"))) << b6;
  EXPECT_LE(std::stod(m[1]), 1e-6) << b6;
}

TEST(L12_Lesson, RunsQuickOn4RanksAndPrintsWhatItsGuideQuotes) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const std::string args = "--auto --quick";
  const CommandResult r = run12(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int k = 1; k <= 6; ++k) EXPECT_TRUE(has(r, "--- beat " + std::to_string(k) + "/6: ")) << k << "\n" << r.output;
  EXPECT_TRUE(has(r, "Lesson 12 done.")) << r.output;
  EXPECT_FALSE(has(r, "DIFFERENT")) << r.output;
  EXPECT_FALSE(std::regex_search(r.output, std::regex(R"(\bNO\b|ABOVE)"))) << r.output;
  expect_static_offload_wastes(beat(r.output, 1));
  expect_chunks_and_states(beat(r.output, 2));
  expect_warmup_statistics(beat(r.output, 3));
  expect_opt_against_lru(beat(r.output, 4));
  expect_bytes_moved(beat(r.output, 5));
  expect_training(beat(r.output, 6));
  expect_guide_blocks("12", args, r.output);
}

TEST(L12_Lesson, GuideNamesOnlyCodeThatExists) { expect_guide_names_exist("12"); }

TEST(L12_Lesson, OneRankExplainsHowToStartIt) {
  const CommandResult r = mt_test::run_command(kBin + "/lesson-12 --auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "mpirun -np 4 build/bin/lesson-12")) << r.output;
  EXPECT_TRUE(has(r, "make lesson-12")) << r.output;
}

TEST(L12_Lesson, UnknownOptionUnderMpirunIsOneLineAndExit2) {
  const CommandResult r = run12("--auto --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;  // rank 0 says it, for every rank
  EXPECT_TRUE(has(r, "unknown option '--bogus'")) << r.output;
  EXPECT_TRUE(has(r, "--data FILE, --steps N, --help")) << r.output;
}

// Only rank 0 reads the terminal; q there ends every rank, after beat 1.
TEST(L12_Lesson, QOnRankZeroQuitsEveryRank) {
  if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is missing: run `make data` first";
  const CommandResult r = run12("--quick", "q\\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "--- beat 1/6:")) << r.output;
  EXPECT_TRUE(has(r, "(quit at beat 1/6)")) << r.output;
  EXPECT_FALSE(has(r, "--- beat 2/6:")) << r.output;
}

// The full run (200 steps of each training run of beat 6, about 40 s here): what the guide quotes from it.
// build/bin/test-lessons --gtest_also_run_disabled_tests --gtest_filter='L12_*FullRun*'
TEST(L12_Lesson, DISABLED_FullRunPrintsWhatItsGuideQuotes) {
  const std::string args = "--auto";
  const CommandResult r = run12(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "within fp32's 1e-6")) << r.output;
  EXPECT_FALSE(has(r, "DIFFERENT")) << r.output;
  expect_guide_blocks("12", args, r.output);
}

}  // namespace
