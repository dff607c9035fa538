// Lesson 05 — the `comm` section (ours): comm.timeout_s sets how long a rank waits in one collective
// or receive before it ends the job; the engine puts it on its group. Only values > 0 are valid.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "dist/process_group.h"
#include "runtime/config.h"
#include "runtime/config_keys.h"
#include "runtime/engine.h"

namespace mz = minitorch::runtime;
using testing::HasSubstr;

namespace {
mz::Config parse(const std::string& extra) {
  return mz::Config::from_json(R"({"train_micro_batch_size_per_gpu": 2)" + extra + "}", 1, "test.json");
}
std::string parse_error(const std::string& extra) {
  try {
    parse(extra);
  } catch (const mz::ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}
}  // namespace

TEST(L05_CommConfig, TimeoutDefaultsTo300AndIsRead) {
  EXPECT_EQ(parse("").comm.timeout_s, 300.0);
  EXPECT_EQ(parse("").comm.timeout_s, minitorch::dist::kDefaultTimeoutSeconds);
  EXPECT_EQ(parse(R"(, "comm": {"timeout_s": 7.5})").comm.timeout_s, 7.5);
  EXPECT_EQ(parse(R"(, "comm": {"timeout_s": 60})").comm.timeout_s, 60.0);
  EXPECT_TRUE(parse(R"(, "comm": {"timeout_s": 60})").warnings.empty());
  const mz::ConfigKey* k = mz::find_config_key("comm.timeout_s");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->status, mz::KeyStatus::implemented);
}

TEST(L05_CommConfig, TimeoutMustBeAPositiveNumber) {
  EXPECT_THAT(parse_error(R"(, "comm": {"timeout_s": 0})"), HasSubstr("comm.timeout_s must be greater than 0.0, got 0"));
  EXPECT_THAT(parse_error(R"(, "comm": {"timeout_s": -5})"), HasSubstr("comm.timeout_s must be greater than 0"));
  EXPECT_THAT(parse_error(R"(, "comm": {"timeout_s": "300"})"), HasSubstr("timeout_s"));
  EXPECT_THAT(parse_error(R"(, "comm": {"timeout": 300})"), HasSubstr("did you mean 'timeout_s'"));
}

TEST(L05_CommConfig, EngineSetsTheTimeoutAndTheStepOnItsGroup) {
  auto& world = minitorch::dist::init(nullptr, nullptr);
  mz::Config cfg = mz::Config::from_json(R"({"train_batch_size": 2, "comm": {"timeout_s": 33},
      "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 8, "vocab_size": 16}})",
                                         1, "test.json");
  minitorch::Generator g(1);
  auto model = std::make_shared<minitorch::nn::GPT>(mz::model_config(cfg, 16), g);
  auto engine = mz::initialize(model, cfg, &world);
  EXPECT_EQ(world.timeout(), 33.0);
  minitorch::Tensor idx = minitorch::Tensor::zeros({2, 8}, minitorch::DType::i32);
  engine->forward(idx, idx);
  EXPECT_EQ(world.current_step(), 1);  // the step in progress, counted from 1
  world.set_timeout(minitorch::dist::kDefaultTimeoutSeconds);
  world.set_current_step(-1);
}
