// The activations of a micro-batch from the GPT's shapes (runtime/activation_formulas.h) against the peak the
// `sim` device's `activation` tag measures in a training step, and the out-of-memory message's activation
// levers (runtime/out_of_memory.h) against the runs they describe.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <regex>
#include <string>

#include "data/batch_sampler.h"
#include "minitorch/allocator.h"
#include "nn/gpt.h"
#include "runtime/activation_formulas.h"
#include "runtime/byte_size.h"
#include "runtime/engine.h"
#include "runtime/out_of_memory.h"
#include "runtime/plan.h"
#include "test_util.h"

namespace mr = minitorch::runtime;
using minitorch::Device;
using minitorch::MemTag;

namespace {

struct Shape {
  std::int64_t L, T, C, H, V, B, segment;
  std::string precision;  // "f32", "bf16", "fp16"
  bool on_host = false;   // cpu_checkpointing
};

std::string config_json(const Shape& s) {
  const std::string precision = s.precision == "bf16"   ? R"("bf16": {"enabled": true},)"
                                : s.precision == "fp16" ? R"("fp16": {"enabled": true},)"
                                                        : "";
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(s.B) + R"(, "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}}, )" + precision + R"(
    "activation_checkpointing": {"enabled": )" + (s.segment > 0 ? "true" : "false") + R"(, "segment_size": )" +
         std::to_string(s.segment > 0 ? s.segment : 1) + R"(, "cpu_checkpointing": )" + (s.on_host ? "true" : "false") + R"(},
    "model": {"name": "baby", "n_layer": )" + std::to_string(s.L) + R"(, "block_size": )" + std::to_string(s.T) +
         R"(, "n_embd": )" + std::to_string(s.C) + R"(, "n_head": )" + std::to_string(s.H) + R"(},
    "training": {"seed": 1, "tokenizer": "char"}})";
}

/// The peak of the `activation` tag on `sim` over the second of two training steps of `s` (random tokens < V).
std::int64_t measured_peak(const Shape& s) {
  using namespace minitorch;
  const mr::Config cfg = mr::Config::from_json(config_json(s), 1, "activations.json");
  mr::Plan plan = mr::make_plan(cfg, {.device = "sim", .device_memory = std::nullopt});
  mr::setup_device(plan);
  Generator init(1), tok(7);
  auto model = std::make_shared<nn::GPT>(mr::model_config(cfg, s.V), init);
  auto engine = mr::initialize(model, cfg, plan, nullptr);
  auto tokens = std::make_shared<std::vector<std::int32_t>>(4096);
  for (auto& t : *tokens) t = static_cast<std::int32_t>(tok.next_u64() % static_cast<std::uint64_t>(s.V));
  const data::BatchSampler sampler(tokens, s.B, s.T, 1);
  std::int64_t peak = 0;
  for (int step = 0; step < 2; ++step) {  // the first allocates AdamW's states: the second is measured
    reset_peak_memory(Device::sim());
    const std::int64_t before = memory_stats(Device::sim()).current(MemTag::activation);
    engine->train_batch(sampler);
    peak = memory_stats(Device::sim()).peak(MemTag::activation) - before;
  }
  return peak;
}

double predicted(const Shape& s) {
  const mr::ActivationShape shape{.B = s.B, .T = s.T, .C = s.C, .H = s.H, .L = s.L, .V = s.V,
                                  .element = s.precision == "f32" ? 4 : 2, .segment = s.segment,
                                  .inputs_on_host = s.on_host};
  return mr::activation_bytes(shape).peak();
}

std::string name(const Shape& s) {
  return "L " + std::to_string(s.L) + ", T " + std::to_string(s.T) + ", C " + std::to_string(s.C) + ", H " +
         std::to_string(s.H) + ", V " + std::to_string(s.V) + ", B " + std::to_string(s.B) + ", segment " +
         std::to_string(s.segment) + (s.on_host ? " on the host" : "") + ", " + s.precision;
}

}  // namespace

// f32: the formula is the allocator's peak to the byte, in either phase, with and without checkpointing.
TEST(L10_ActivationFormulas, F32PeakEqualsTheMeasuredOneToTheByte) {
  const std::vector<Shape> shapes = {
      {4, 64, 128, 4, 64, 1, 0, "f32"},   // the baby of lesson 10: the last block's backward peaks
      {2, 32, 64, 4, 64, 2, 0, "f32"},    {3, 32, 64, 2, 64, 2, 1, "f32"},  // segments of one block
      {5, 32, 64, 4, 64, 1, 2, "f32"},    // the last segment shorter: the one before it peaks
      {2, 32, 64, 4, 3000, 2, 0, "f32"},  // a wide vocabulary: the head's logits peak
      {2, 32, 64, 4, 3000, 2, 1, "f32"},
      {2, 16, 64, 4, 3000, 2, 0, "f32"}};  // lm_head's backward peaks: the tied weight's V·C gradient
  for (const Shape& s : shapes) {
    SCOPED_TRACE(name(s));
    EXPECT_EQ(measured_peak(s), static_cast<std::int64_t>(predicted(s)));
  }
}

// 16-bit: equal up to the loss's 4 bytes without checkpointing; with it within 6 % (the header says which copies
// are not counted).
TEST(L10_ActivationFormulas, SixteenBitPeakEqualsOrIsWithinSixPercent) {
  const std::vector<Shape> exact = {{4, 64, 128, 4, 64, 1, 0, "bf16"}, {2, 32, 64, 4, 3000, 2, 0, "bf16"},
                                    {2, 32, 64, 4, 64, 2, 0, "fp16"}, {2, 32, 64, 4, 3000, 2, 1, "bf16"},
                                    {2, 16, 64, 4, 3000, 2, 0, "bf16"}};
  for (const Shape& s : exact) {
    SCOPED_TRACE(name(s));
    EXPECT_NEAR(static_cast<double>(measured_peak(s)), predicted(s), 4);
  }
  for (const Shape& s : {Shape{4, 64, 128, 4, 64, 1, 1, "bf16"}, Shape{3, 32, 64, 2, 64, 2, 1, "fp16"}}) {
    SCOPED_TRACE(name(s));
    const double m = static_cast<double>(measured_peak(s)), p = predicted(s);
    EXPECT_LE(std::abs(m - p), 0.06 * m) << "measured " << m << ", predicted " << p;
  }
}

// cpu_checkpointing: the inputs wait on the host, so only the recomputed segment's own is on the device.
TEST(L10_ActivationFormulas, CpuCheckpointingKeepsOneInputOnTheDevice) {
  const Shape s{4, 64, 128, 4, 64, 1, 1, "f32", /*on_host=*/true};
  EXPECT_EQ(measured_peak(s), static_cast<std::int64_t>(predicted(s)));
  const Shape kept{4, 64, 128, 4, 64, 1, 1, "f32"};
  EXPECT_EQ(measured_peak(kept) - measured_peak(s), 3 * 4 * 64 * 128) << "L - 1 inputs of (1, T, C) f32 left on the host";
}

TEST(L10_ActivationFormulas, TheTextNamesEveryTermWithTheElementSize) {
  const mr::ActivationShape baby{.B = 1, .T = 64, .C = 128, .H = 4, .L = 4, .V = 64, .element = 4, .segment = 0};
  EXPECT_EQ(mr::activation_text(baby),
            "a = 4·(16·BTC + B·H·T²) + 16·BT = 590848 B per block; the peak, in the last block's backward: L·a (4 x "
            "590848) + its working set 426496 (gradients in f32 5·4·BTC, c_proj's weight gradient 4·4C², its bias 4C) "
            "+ 260 (positions 4T, the loss) = 2.66 MiB");
  mr::ActivationShape wide = baby;
  wide.V = 20000, wide.element = 2;
  EXPECT_TRUE(mt_test::contains(mr::activation_text(wide), "the head ")) << mr::activation_text(wide);
  EXPECT_TRUE(mt_test::contains(mr::activation_text(wide), "the tied weight's gradient 4·VC")) << mr::activation_text(wide);
  wide.T = 1024;  // the logits outgrow the tied weight: the loss's backward peaks
  EXPECT_TRUE(mt_test::contains(mr::activation_text(wide), "their f32 copy 4·BTV")) << mr::activation_text(wide);
  EXPECT_THROW(mr::activation_bytes({.B = 1, .T = 1, .C = 1, .H = 1, .L = 2, .V = 1, .element = 4, .segment = 3}),
               std::invalid_argument);
}

// Each activation lever of the out-of-memory message, run on sim: its printed figure within 10 % of the
// activation peak that run measures (the figures are the formula's, printed to 0.01 MiB).
TEST(L10_OutOfMemoryLevers, EachActivationLeverRunsOnSimWithinTenPercentOfItsFigure) {
  const Shape run{3, 64, 128, 4, 64, 4, 0, "f32"};
  const mr::Config cfg = mr::Config::from_json(config_json(run), 1, "levers.json");
  const mr::MemoryRun memory = mr::memory_run_for(cfg, mr::model_config(cfg, run.V), 0);
  minitorch::MemoryStats in_use;
  in_use.current_bytes[static_cast<int>(MemTag::activation)] = 123456;  // a partial forward's: not a lever's source
  in_use.current_total = 123456;
  const minitorch::OutOfMemory e(Device::sim(), MemTag::activation, 65536, 1 << 20, in_use);
  const std::string msg = mr::explain_out_of_memory(e, memory);
  const auto figure = [&](const std::string& lever) {
    const std::smatch m = [&] {
      std::smatch found;
      std::regex_search(msg, found, std::regex(lever + "[^\n]*activations about ([0-9.]+) MiB"));
      return found;
    }();
    EXPECT_FALSE(m.empty()) << "no '" << lever << "' lever in:\n" << msg;
    return m.empty() ? 0.0 : std::stod(m[1]) * 1048576;
  };
  const double half = figure("micro-batch 2 with gradient_accumulation_steps 2"), ckpt = figure("activation checkpointing");
  Shape halved = run, checkpointed = run;
  halved.B = 2, checkpointed.segment = 1;
  const double measured_half = static_cast<double>(measured_peak(halved)),
               measured_ckpt = static_cast<double>(measured_peak(checkpointed));
  EXPECT_LE(std::abs(half - measured_half), 0.10 * measured_half) << msg;
  EXPECT_LE(std::abs(ckpt - measured_ckpt), 0.10 * measured_ckpt) << msg;
  EXPECT_TRUE(mt_test::contains(msg, "B·T·C·L·4 = 4·64·128·3·4 = " + mr::format_mib(4.0 * 64 * 128 * 3 * 4))) << msg;
  EXPECT_TRUE(mt_test::contains(msg, "activations of this run, micro-batch 4: ")) << msg;
  EXPECT_TRUE(mt_test::contains(msg, "= " + mr::format_mib(static_cast<double>(measured_peak(run))) + " (in use when it failed: 0.12 MiB)"))
      << msg;
}
