// Bad numbers and bad shapes in a config: each one clear ConfigError naming the key and what is
// allowed, before anything is allocated or divided by.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "minitorch/json_limits.h"
#include "runtime/config.h"
#include "runtime/engine.h"
#include "runtime/model_budget.h"
#include "config_test_util.h"

using minitorch::runtime::Config;
using minitorch::runtime::ConfigError;
using namespace config_test;

namespace {
std::string nested(int levels) { return std::string(levels, '[') + "1" + std::string(levels, ']'); }
}  // namespace

TEST(L03_Config, DeeplyNestedValueIsOneErrorNotACrash) {
  // 100 000 levels parse, then dump() in the error path overflowed the stack (SIGSEGV).
  std::string msg = parse_error(with(R"("optimizer": {"params": {"lr": )" + nested(100000) + "}}"));
  EXPECT_TRUE(contains(msg, "test.json: JSON nested deeper than 64 levels")) << msg.substr(0, 300);
  // 60 levels are within the bound: the usual type error, quoting only an excerpt.
  msg = parse_error(with(R"("gradient_clipping": )" + nested(60)));
  EXPECT_TRUE(contains(msg, "gradient_clipping must be a number, got [[[[")) << msg;
  EXPECT_LT(msg.size(), 200u) << msg;
}

TEST(L03_Config, ErrorMessagesQuoteAtMost80CharactersOfAValue) {
  std::string big = "[";
  for (int i = 0; i < 100000; ++i) big += std::to_string(i) + ",";
  big.back() = ']';
  std::string msg = parse_error(with(R"("steps_per_print": )" + big));
  EXPECT_TRUE(contains(msg, "steps_per_print must be an integer, got [0,1,2,")) << msg.substr(0, 300);
  EXPECT_TRUE(contains(msg, "...")) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 200u);
  msg = parse_error(with(R"("model": {"name": "baby", ")" + std::string(5000, 'k') + R"(": 1})"));
  EXPECT_TRUE(contains(msg, "unknown key 'kkkk")) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 250u);
}

TEST(L03_Config, ErrorMessagesQuoteAtMost80CharactersOfAString) {
  // L03_Fuzz.Config: "WarmupCosineLR" mutated into 40 000 characters ('WarmupCosineL[[[[...') was quoted
  // whole in "unknown scheduler type"; the same held for every string a config names.
  const std::string junk = "WarmupCosineL" + std::string(40000, '[');
  const std::pair<std::string, std::string> cases[] = {
      {R"("scheduler": {"type": ")" + junk + R"("})", "unknown scheduler type 'WarmupCosineL[[["},
      {R"("optimizer": {"type": ")" + junk + R"("})", "optimizer.type 'WarmupCosineL[[["},
      {R"("model": {"name": ")" + junk + R"("})", "model.name 'WarmupCosineL[[["},
      {R"("training": {"tokenizer": ")" + junk + R"("})", "got 'WarmupCosineL[[["},
      {R"("zero_optimization": {"offload_optimizer": {"device": ")" + junk + R"("}})", "got 'WarmupCosineL[[["},
      {R"("scheduler": {"type": "WarmupLR", "params": {"warmup_type": ")" + junk + R"("}})", "got 'WarmupCosineL[[["},
      {R"("bf16": {")" + junk + R"(": 1, ")" + junk + R"(": 2})", "duplicate key 'WarmupCosineL[[["},
  };
  for (const auto& [extra, what] : cases) {
    const std::string msg = parse_error(with(extra));
    EXPECT_TRUE(contains(msg, what)) << msg.substr(0, 300);
    EXPECT_TRUE(contains(msg, "...")) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 300u) << msg.substr(0, 300);
  }
}

TEST(L03_Config, AnUnknownKeyFarLongerThanAnyRealOneGetsNoSuggestion) {
  // L03_Fuzz.Config: an unknown key of 80 000 characters took 0.1 s (ASan: more) to compare by edit
  // distance with every valid key, growing with the key; no real key is longer than 41 characters.
  const std::string key(200000, 'k');
  const auto start = std::chrono::steady_clock::now();
  std::string msg = parse_error(with(R"("zero_optimization": {")" + key + R"(": 1})"));
  EXPECT_TRUE(contains(msg, "unknown key 'kkkk")) << msg.substr(0, 300);
  EXPECT_TRUE(contains(msg, "...' in zero_optimization")) << msg.substr(0, 300);
  EXPECT_FALSE(contains(msg, "did you mean")) << msg.substr(0, 300);
  Config c = parse(with("\"" + key + "\": 1"));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_TRUE(contains(c.warnings[0], "unknown top-level key 'kkkk")) << c.warnings[0].substr(0, 300);
  EXPECT_FALSE(contains(c.warnings[0], "did you mean"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.5);
  // A short typo still gets its suggestion.
  msg = parse_error(with(R"("zero_optimization": {"reduce_bucket_sz": 1})"));
  EXPECT_TRUE(contains(msg, "did you mean 'reduce_bucket_size'?")) << msg;
}

TEST(L03_Config, PeriodsAndCountsMustBePositive) {
  // log_interval 0 and steps_per_print 0 divided by zero (SIGFPE); eval_iters 0 averaged nothing (nan).
  EXPECT_EQ(parse_error(with(R"("training": {"log_interval": 0})")),
            "test.json: training.log_interval must be at least 1, got 0");
  EXPECT_EQ(parse_error(with(R"("steps_per_print": 0, "wall_clock_breakdown": true)")),
            "test.json: steps_per_print must be at least 1, got 0");
  EXPECT_EQ(parse_error(with(R"("training": {"eval_iters": 0})")), "test.json: training.eval_iters must be at least 1, got 0");
  // An element count of 0 is DeepSpeed's too (every tensor its own bucket); below it, its range.
  EXPECT_EQ(parse_error(with(R"("zero_optimization": {"reduce_bucket_size": -1})")),
            "test.json: zero_optimization.reduce_bucket_size must be at least 0, got -1");
}

TEST(L03_Config, NumericRangesNameTheAllowedRange) {
  EXPECT_EQ(parse_error(with(R"("optimizer": {"type": "AdamW", "params": {"betas": [1.0, 0.999]}})")),
            "test.json: optimizer.params.betas must both be in [0, 1), got [1.0,0.999]");
  EXPECT_EQ(parse_error(with(R"("model": {"dropout": 1.5})")), "test.json: model.dropout must be between 0.0 and 1.0, got 1.5");
  EXPECT_EQ(parse_error(with(R"("model": {"n_embd": 4294967296})")),
            "test.json: model.n_embd must be between 1 and 2147483647, got 4294967296");
  EXPECT_EQ(parse_error(with(R"("scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 10,
                              "cos_min_ratio": 2}})")),
            "test.json: scheduler.params.cos_min_ratio must be between 0.0 and 1.0, got 2");
  EXPECT_EQ(parse_error(with(R"("scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": -1}})")),
            "test.json: scheduler.params.warmup_max_lr must be at least 0.0, got -1");
  EXPECT_TRUE(contains(parse_error(with(R"("gradient_clipping": 1e999)")), "test.json: malformed JSON: ")) << "not a crash";
}

TEST(L03_Config, BatchProductOverflowIsAnError) {
  // 2^62 * 4 overflowed int64 (undefined behaviour, caught by UBSan) before the consistency check.
  std::string msg = parse_error(R"({"train_micro_batch_size_per_gpu": 4611686018427387904, "gradient_accumulation_steps": 4})");
  EXPECT_TRUE(contains(msg, "4611686018427387904 * 4 * 1 overflows a 64-bit integer")) << msg;
  msg = parse_error(R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4611686018427387904,
                     "gradient_accumulation_steps": 4})");
  EXPECT_TRUE(contains(msg, "overflows a 64-bit integer")) << msg;
}

TEST(L03_Config, ModelTooLargeForMemoryIsRefusedWithTheFigure) {
  Config c = Config::from_json(with(R"("model": {"name": "baby", "n_layer": 1000000})"), 1, "big.json");
  const auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  try {
    minitorch::runtime::model_config(c, 65);
  } catch (const ConfigError& e) {
    msg = e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << "nothing may be allocated first";
  // Ψ = 65·128 + 64·128 + 10^6·(12·128² + 13·128) + 2·128 = 198,257,528,768; × 16 bytes = 3.2 TB.
  EXPECT_TRUE(contains(msg, "big.json: model GPTConfig(L=1000000")) << msg;
  EXPECT_TRUE(contains(msg, "1.98e+11 parameters; at 16 bytes each (parameters, gradients, AdamW states) it needs 3.2 TB"))
      << msg;
  EXPECT_TRUE(contains(msg, "of memory available; lower model.n_layer")) << msg;
  // The same shape fits a machine that has the memory.
  auto g = minitorch::nn::GPTConfig::named("baby");
  g.vocab_size = 65;
  EXPECT_NO_THROW(minitorch::runtime::check_model_fits(g, 2, 16, "x", 1ull << 40));
  EXPECT_THROW(minitorch::runtime::check_model_fits(g, 2, 16, "x", 1000), ConfigError);
}
