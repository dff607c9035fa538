// DeepSpeed's config rules, case by case: tests/runtime/deepspeed_config_cases.json holds each case (a config,
// the outcome and values the parsed Config must hold), written from DeepSpeed's config classes; this runs them.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "config_test_util.h"
#include "runtime/config.h"

using minitorch::runtime::Config;
using nlohmann::json;
using namespace config_test;

namespace {

/// The Config fields a case may check, by the name the cases use.
const std::map<std::string, std::function<json(const Config&)>>& fields() {
  static const std::map<std::string, std::function<json(const Config&)>> f = {
      {"bf16", [](const Config& c) { return json(c.bf16); }},
      {"fp16.enabled", [](const Config& c) { return json(c.fp16.enabled); }},
      {"fp16.loss_scale", [](const Config& c) { return json(c.fp16.loss_scale); }},
      {"gradient_clipping", [](const Config& c) { return json(c.gradient_clipping); }},
      {"zero.stage", [](const Config& c) { return json(c.zero.stage); }},
      {"zero.overlap_comm", [](const Config& c) { return json(c.zero.overlap_comm); }},
      {"zero.reduce_bucket_size", [](const Config& c) { return json(c.zero.reduce_bucket_size); }},
      {"zero.allgather_bucket_size", [](const Config& c) { return json(c.zero.allgather_bucket_size); }},
      {"zero.sub_group_size", [](const Config& c) { return json(c.zero.sub_group_size); }},
      {"zero.stage3_prefetch_bucket_size", [](const Config& c) { return json(c.zero.stage3_prefetch_bucket_size); }},
      {"zero.stage3_param_persistence_threshold", [](const Config& c) { return json(c.zero.stage3_param_persistence_threshold); }},
      {"zero.offload_optimizer.device", [](const Config& c) { return json(c.zero.offload_optimizer.device); }},
      {"zero.offload_optimizer.ratio", [](const Config& c) { return json(c.zero.offload_optimizer.ratio); }},
      {"zero.offload_param.device", [](const Config& c) { return json(c.zero.offload_param.device); }},
  };
  return f;
}

json load_cases() {
  std::ifstream in(std::string(MT_SOURCE_DIR) + "/tests/runtime/deepspeed_config_cases.json");
  if (!in) return json();
  return json::parse(in);
}

}  // namespace

TEST(L03_Config, DeepSpeedsRulesCaseByCase) {
  const json cases = load_cases();
  ASSERT_TRUE(cases.contains("cases")) << "tests/runtime/deepspeed_config_cases.json is missing or has no cases";
  int n = 0, departures = 0;
  for (const json& t : cases["cases"]) {
    ++n;
    departures += t.contains("departure");
    const std::string name = t.at("case").get<std::string>(), expect = t.at("expect").get<std::string>();
    json config = t.at("config");
    if (!config.contains("train_batch_size") && !config.contains("train_micro_batch_size_per_gpu"))
      config["train_micro_batch_size_per_gpu"] = 2;
    const std::string text = config.dump(), message = t.value("message", "");
    SCOPED_TRACE(name + ": " + text);
    if (expect == "error") {
      const std::string got = parse_error(text, t.value("world", 1));
      EXPECT_TRUE(contains(got, message) && !contains(got, "(no error)") && !contains(got, "(not a ConfigError)")) << got;
      continue;
    }
    Config c;
    ASSERT_NO_THROW(c = parse(text, t.value("world", 1)));
    if (expect == "ok") {
      EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
    } else {
      ASSERT_EQ(expect, "warning");
      bool found = false;
      for (const std::string& w : c.warnings) found = found || contains(w, message);
      EXPECT_TRUE(found) << (c.warnings.empty() ? std::string("no warning") : c.warnings[0]);
    }
    const json checks = t.value("check", json::object());
    for (const auto& [field, want] : checks.items()) {
      auto f = fields().find(field);
      ASSERT_NE(f, fields().end()) << "the case checks an unknown field " << field;
      EXPECT_EQ(f->second(c), want) << field;
    }
  }
  EXPECT_GE(n, 70);          // every kind of key (sections, spellings, bad values, departures), not a token few
  EXPECT_GE(departures, 3);  // and says where minitorch differs on purpose
}
