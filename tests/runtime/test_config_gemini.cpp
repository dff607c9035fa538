// The `gemini` section (Colossal-AI's GeminiPlugin keys, docs/config.md): defaults, what it needs from the rest of
// the config, and every bad value one clear error naming the key.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config_test_util.h"
#include "runtime/plan.h"

using namespace config_test;
namespace mr = minitorch::runtime;

namespace {

std::string gemini(const std::string& section, const std::string& zero = R"({"stage": 3})") {
  return with(R"("zero_optimization": )" + zero + R"(, "gemini": )" + section);
}

}  // namespace

TEST(L12_GeminiConfig, DefaultsAreColossalAIsAndTheRunIsGeminiOnStage3EvenOnOneRank) {
  const mr::Config c = parse(gemini("{}"));
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  EXPECT_TRUE(c.gemini.enabled);
  EXPECT_EQ(c.gemini.placement_policy, "static");
  EXPECT_EQ(c.gemini.shard_param_frac, 1.0);
  EXPECT_EQ(c.gemini.offload_optim_frac, 0.0);
  EXPECT_EQ(c.gemini.offload_param_frac, 0.0);
  EXPECT_EQ(c.gemini.search_range_m, 32);
  EXPECT_EQ(c.gemini.min_chunk_size_m, 32);
  EXPECT_EQ(c.gemini.hidden_dim, 0);
  EXPECT_FALSE(parse(with("")).gemini.enabled);
  const mr::Plan plan = mr::make_plan(c, {});
  EXPECT_TRUE(plan.gemini);
  EXPECT_EQ(plan.zero_stage, 3) << "Gemini keeps its chunks on one rank, as offload keeps the stage";
  EXPECT_TRUE(contains(plan.describe(), "Gemini")) << plan.describe();
  const mr::Config dict = parse(gemini(R"({"chunk_config_dict": {"2": {"chunk_size": 4096}, "1": {"chunk_size": 99, "keep_gathered": true}}})"), 2);
  EXPECT_EQ(dict.gemini.chunk_config_dict.at(2).chunk_size, 4096);
  EXPECT_FALSE(dict.gemini.chunk_config_dict.at(2).keep_gathered);
  EXPECT_TRUE(dict.gemini.chunk_config_dict.at(1).keep_gathered);
}

TEST(L12_GeminiConfig, BadInputIsOneClearError) {
  const std::pair<std::string, std::string> cases[] = {
      {gemini("{}", R"({"stage": 2})"), "gemini needs zero_optimization.stage 3"},
      {with(R"("gemini": {})"), "gemini needs zero_optimization.stage 3"},
      {gemini("{}", R"({"stage": 3, "offload_optimizer": {"device": "cpu"}})"),
       "zero_optimization.offload_optimizer and gemini together"},
      {gemini("{}", R"({"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}})"),
       "offload_optimizer and gemini together"},
      {gemini(R"({"placement_policy": "auto", "gpu_margin_mem_ratio": 0.5})"), "gemini.gpu_margin_mem_ratio"},
      {gemini(R"({"placement_policy": "cuda"})"), "placement_policy"},
      {gemini(R"({"shard_param_frac": 1.5})"), "gemini.shard_param_frac"},
      {gemini(R"({"offload_optim_frac": -0.1})"), "gemini.offload_optim_frac"},
      {gemini(R"({"offload_optim_frac": 0.5})"), "gemini.offload_optim_frac 0.5"},
      {gemini(R"({"steady_cuda_cap_ratio": 1.5})"), "gemini.steady_cuda_cap_ratio"},
      {gemini(R"({"max_prefetch": -1})"), "gemini.max_prefetch"},
      {gemini(R"({"search_range_m": -1})"), "gemini.search_range_m"},
      {gemini(R"({"hidden_dim": 0})"), "gemini.hidden_dim"},
      {gemini(R"({"chunk_size": 1024})"), "unknown key 'chunk_size' in gemini"},
      {gemini(R"({"chunk_config_dict": {"two": {"chunk_size": 1024}}})"), "a key is a data-parallel size"},
      {gemini(R"({"chunk_config_dict": {"-1": {"chunk_size": 1024}}})"), "a key is a data-parallel size"},
      {gemini(R"({"chunk_config_dict": {"1": 1024}})"), "must be an object"},
      {gemini(R"({"chunk_config_dict": {"1": {"chunk_size": 0}}})"), ".chunk_size must be an integer >= 1"},
      {gemini(R"({"chunk_config_dict": {"1": {"chunk_size": 64, "keep": true}}})"), "unknown key 'keep'"},
      {gemini(R"({"chunk_config_dict": {"1": {"chunk_size": 64, "keep_gathered": 1}}})"), "keep_gathered must be a boolean"},
      {gemini(R"({"chunk_config_dict": {"4": {"chunk_size": 64}}})"), "no entry for this run's data-parallel size 1"},
  };
  for (const auto& [json, message] : cases) {
    const std::string msg = parse_error(json);
    EXPECT_TRUE(contains(msg, message)) << json << "\n  -> " << msg;
  }
  // A chunk must split into equal shards, unless it is kept gathered.
  EXPECT_TRUE(contains(parse_error(gemini(R"({"chunk_config_dict": {"2": {"chunk_size": 65}}})"), 2), "not a multiple of the data-parallel size 2"));
  EXPECT_NO_THROW(parse(gemini(R"({"chunk_config_dict": {"2": {"chunk_size": 65, "keep_gathered": true}}})"), 2));
}

TEST(L12_GeminiConfig, WhatHasNoEffectSaysSo) {
  auto one_warning = [](const std::string& json, const std::string& says) {
    const mr::Config c = parse(json);
    EXPECT_EQ(c.warnings.size(), 1u) << json;
    EXPECT_TRUE(!c.warnings.empty() && contains(c.warnings[0], says) && contains(c.warnings[0], "no effect here"))
        << (c.warnings.empty() ? "(none)" : c.warnings[0]);
    return c;
  };
  // offload_param_frac needs the other two at 1.0 (as Colossal-AI): ignored, and said.
  EXPECT_EQ(one_warning(gemini(R"({"offload_param_frac": 0.5})"), "gemini.offload_param_frac").gemini.offload_param_frac, 0.0);
  EXPECT_EQ(parse(gemini(R"({"offload_param_frac": 0.5, "offload_optim_frac": 1.0})")).gemini.offload_param_frac, 0.5);
  one_warning(gemini(R"({"enable_gradient_accumulation": true})"), "gemini.enable_gradient_accumulation");
  // Each policy's own keys: the fractions are static's, the two ratios auto's.
  const mr::Config a = one_warning(gemini(R"({"placement_policy": "auto", "offload_param_frac": 0.5})"), "gemini.offload_param_frac");
  EXPECT_EQ(a.gemini.offload_param_frac, 0.0);
  EXPECT_EQ(a.gemini.offload_optim_frac, 1.0) << "auto: every optimizer state on the host";
  one_warning(gemini(R"({"steady_cuda_cap_ratio": 0.5})"), "gemini.steady_cuda_cap_ratio");
  EXPECT_TRUE(parse(gemini(R"({"placement_policy": "auto", "steady_cuda_cap_ratio": 0.5, "warmup_non_model_data_ratio": 0.7})")).warnings.empty());
  one_warning(gemini("{}", R"({"stage": 3, "stage3_prefetch_bucket_size": 1000})"), "stage3_prefetch_bucket_size");
  one_warning(gemini("{}", R"({"stage": 3, "stage3_param_persistence_threshold": 0})"), "stage3_param_persistence_threshold");
}

TEST(L12_GeminiConfig, TheShippedConfigRunsGeminiOnOneTwoAndFourRanks) {
  std::ifstream in(std::string(MT_SOURCE_DIR) + "/configs/gemini.json");
  ASSERT_TRUE(in) << "configs/gemini.json is missing";
  std::stringstream text;
  text << in.rdbuf();
  for (int world : {1, 2, 4}) {
    const mr::Config c = parse(text.str(), world);
    EXPECT_TRUE(c.warnings.empty()) << world << " ranks: " << c.warnings[0];
    EXPECT_TRUE(c.gemini.enabled);
    EXPECT_EQ(c.gemini.offload_param_frac, 0.5) << "not ignored: offload_optim_frac is 1.0";
    EXPECT_TRUE(mr::make_plan(c, {}).gemini);
  }
}
