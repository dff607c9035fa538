// minitorch-estimate at its limits: --config on the largest --ranks (2^24) answers at once, with the bytes the
// partition gives every rank; and what 64-bit bytes cannot hold (a huge --buffer-factor or --params) is one
// clear error naming the flag, exit 2, never a wrapped number, "inf GiB" or a JSON null.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "test_util.h"

using mt_test::bin;
using mt_test::run_command;
using testing::HasSubstr;

namespace {
void expect_usage_error(const std::string& args, const std::string& needle) {
  auto r = run_command(bin("minitorch-estimate") + " " + args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << args << "\n" << r.output;
  EXPECT_THAT(r.output, HasSubstr(needle)) << args;
  EXPECT_THAT(r.output, testing::Not(HasSubstr("inf GiB"))) << args;
}

/// Σ over the runs of (ranks in the run) × run[tag].
std::int64_t sum_over_ranks(const nlohmann::json& runs, const char* tag) {
  std::int64_t sum = 0;
  for (const auto& run : runs) sum += (run["last_rank"].get<std::int64_t>() - run["first_rank"].get<std::int64_t>() + 1) * run[tag].get<std::int64_t>();
  return sum;
}
}  // namespace

TEST(L06_EstimateCli, TheLargestRankCountIsPlannedInClassesOfRanksAtOnce) {
  // One bucket (DeepSpeed's default reduce_bucket_size) of Ψ < N elements, padded to N: each of the first Ψ
  // ranks owns one element, the others none. Before, every rank was planned: minutes and gigabytes.
  mt_test::TempDir dir;
  const std::string corpus = mt_test::write_corpus(dir);
  const std::string config = dir.write("c.json", R"({"train_micro_batch_size_per_gpu": 1,
    "zero_optimization": {"stage": 1, "stage3_param_persistence_threshold": 0},
    "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 10, "block_size": 8}})");
  const std::int64_t n = 1 << 24;
  const auto start = std::chrono::steady_clock::now();
  auto r = run_command(bin("minitorch-estimate") + " --config " + config + " --data " + corpus + " --ranks " +
                       std::to_string(n) + " --json");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(seconds, 30) << "a few partitions, not 2^24 of them (the tool alone takes well under a second)";
  const nlohmann::json row = nlohmann::json::parse(r.output)["rows"][0];
  const std::int64_t psi = row["params"];
  ASSERT_LT(psi, n);
  EXPECT_EQ(row["buckets"], 1);
  EXPECT_EQ(row["padding"], n - psi);
  for (const auto& st : row["stages"]) {
    const int stage = st["stage"];
    SCOPED_TRACE("stage " + std::to_string(stage));
    const nlohmann::json& runs = st["exact"];
    ASSERT_FALSE(runs.empty());
    EXPECT_EQ(runs.front()["first_rank"], 0);
    EXPECT_EQ(runs.back()["last_rank"], n - 1);
    for (std::size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(runs[i]["first_rank"], runs[i - 1]["last_rank"].get<int>() + 1);
    // DDP: every rank holds all AdamW states; ZeRO: each element's are on exactly one rank.
    EXPECT_EQ(sum_over_ranks(runs, "optim"), (stage == 0 ? n : 1) * 8 * psi);
    const double formula = st["formula_bytes"]["total"];
    if (stage == 0) {
      ASSERT_EQ(runs.size(), 1u);
      EXPECT_EQ(runs[0]["total"], 16 * psi);
      EXPECT_EQ(formula, 16.0 * static_cast<double>(psi));
    }
    if (stage == 1 || stage == 2) {  // f32: P = G = 4, K = 8; the flat buffers hold Ψ + padding = N elements
      ASSERT_EQ(runs.size(), 2u) << runs.dump();
      EXPECT_EQ(runs[0]["last_rank"], psi - 1);
      EXPECT_EQ(runs[0]["param"], 4 * n);
      EXPECT_EQ(runs[0]["grad"], stage == 1 ? 4 * n : 4);
      EXPECT_EQ(runs[0]["optim"], 8);
      EXPECT_EQ(runs[1]["optim"], 0);
      const double expected = stage == 1 ? 8.0 * psi + 8.0 * psi / n : 4.0 * psi + 12.0 * psi / n;
      EXPECT_DOUBLE_EQ(formula, expected);
    }
  }
}

TEST(L06_EstimateCli, BytesBeyond64BitsAreRefusedNamingTheFlag) {
  const std::string params = "--params 7.5B --ranks 64 --largest-layer 1M";
  for (const char* factor : {"1e300", "1e308"}) {
    expect_usage_error(params + " --buffer-factor " + factor, "--buffer-factor");
    expect_usage_error(params + " --buffer-factor " + std::string(factor) + " --json", "lower --buffer-factor");
    expect_usage_error(params + " --offload optimizer --stage 2 --buffer-factor " + std::string(factor),
                       "DeepSpeed's ZeRO-2 CPU estimate");
  }
  // Large but within 64 bits: still computed, to the byte as DeepSpeed's int() returns it.
  auto big = run_command(bin("minitorch-estimate") + " --params 1M --ranks 4 --stage 2 --buffer-factor 1e9 --json");
  ASSERT_EQ(big.exit_code, 0) << big.output;
  EXPECT_EQ(nlohmann::json::parse(big.output)["rows"][0]["deepspeed"]["zero2"]["cpu"], 4'000'000LL * 4 * 1'000'000'000LL);
  // The paper's 16Ψ of 1e18 parameters is 1.6e19 bytes: the model is too large, not the factor.
  expect_usage_error("--params 1e18 --ranks 1 --stage 0", "--params 1,000,000,000,000,000,000 with --ranks 1");
  expect_usage_error("--params 1e18 --ranks 1 --stage 0", "lower --params or --ranks");

  mt_test::TempDir dir;
  const std::string config = dir.write("c.json", R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3},
    "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 10, "block_size": 8}})");
  const std::string with_config = "--config " + config + " --data " + mt_test::write_corpus(dir) + " --ranks 4";
  expect_usage_error(with_config + " --buffer-factor 1e300", "--buffer-factor 1e+300: DeepSpeed's ZeRO-");
  expect_usage_error(with_config + " --buffer-factor 1e308 --json", "lower --buffer-factor");
}
