// Lesson 08: activation checkpointing. build/bin/lesson-08 [--auto] [--quick] [--beat N] [--data TEXT] [--steps N]
// [--model NAME] (make lesson-08)
// What a GPT block keeps for backward, measured to the byte and derived; autograd::checkpoint keeping only
// the block's input with bit-identical gradients; memory and time per segment_size; and the baby GPT
// trained on the KJV with checkpointing on, losses bit-identical to lesson 03's run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "autograd/checkpoint.h"
#include "autograd/engine.h"
#include "autograd/functions.h"
#include "common/beat.h"
#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "minitorch/allocator.h"
#include "minitorch/parallel.h"
#include "nn/block.h"
#include "nn/gpt.h"
#include "runtime/config.h"
#include "runtime/engine.h"

using namespace minitorch;

namespace {
// configs/baby.json as lesson 03 runs it, with activation checkpointing on (segment_size blocks) or off (0).
std::string baby_config(long long steps, long long eval_iters, long long segment) {
  const long long warmup = std::max(1LL, steps / 12);
  return R"({
    "train_batch_size": 32, "train_micro_batch_size_per_gpu": 32, "gradient_accumulation_steps": 1,
    "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 2e-3,
                  "warmup_num_steps": )" + std::to_string(warmup) + R"(, "total_num_steps": )" +
         std::to_string(steps) + R"(, "warmup_type": "linear"}},
    "zero_optimization": {"stage": 0},
    "activation_checkpointing": {"enabled": )" + (segment > 0 ? "true" : "false") + R"(, "segment_size": )" +
         std::to_string(std::max(1LL, segment)) + R"(},
    "model": {"name": "baby"},
    "training": {"steps": )" + std::to_string(steps) + R"(, "eval_iters": )" + std::to_string(eval_iters) +
         R"(, "seed": 1337, "tokenizer": "char"}
  })";
}
// Beat 3's model: the named GPT (vocabulary 64, random tokens), segments of `segment` blocks (0 = off).
std::string bench_config(const std::string& model, long long segment) {
  return R"({"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.1}},
    "activation_checkpointing": {"enabled": )" + std::string(segment > 0 ? "true" : "false") +
         R"(, "segment_size": )" + std::to_string(std::max(1LL, segment)) + R"(},
    "model": {"name": ")" + model + R"(", "vocab_size": 64}, "training": {"seed": 1337}})";
}
double mib(std::int64_t bytes) { return static_cast<double>(bytes) / 1048576.0; }
std::int64_t activation_now() { return memory_stats().current(MemTag::activation); }

struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 200;
  std::string model = "small";
};
}  // namespace

// What the beats hand on: beat 1's block, its input and what it kept, which beat 2 compares against.
struct State {
  nn::GPTConfig baby = nn::GPTConfig::named("baby");
  std::unique_ptr<nn::Block> block;
  Tensor x;                        // (B, T, C)
  std::int64_t held = 0, btc = 0;  // beat 1's bytes saved for backward, and B·T·C
  std::vector<float> plain_grads;  // the block's gradients without checkpointing
};

void a_blocks_activations_measured_and_counted(lesson::Beats& beats, State& s) {
  beats.beat("a block's activations, measured and counted",
             "One baby GPT block (B = 32, T = 64, C = 128, H = 4) forward, with the allocator's `activation`\n"
             "tag on: every tensor a backward node keeps stays allocated until backward. Korthikanti et al.\n"
             "count 34·s·b·h + 5·a·s²·b bytes per layer (16-bit, with dropout); ours is f32, no dropout.");
  const nn::GPTConfig& baby = s.baby;
  const std::int64_t B = 32, T = baby.block_size, C = baby.n_embd, H = baby.n_head;
  Generator gen(1337);
  s.block = std::make_unique<nn::Block>(baby, gen);
  nn::Block& block = *s.block;
  s.x = Tensor::randn({B, T, C}, gen);  // (B, T, C), made outside the tag: the caller's
  const Tensor& x = s.x;
  std::int64_t& held = s.held;
  std::vector<float>& plain_grads = s.plain_grads;
  {
    TagScope tag(MemTag::activation);
    const std::int64_t before = activation_now();
    Tensor y = block.forward(x);  // (B, T, C)
    held = activation_now() - before - static_cast<std::int64_t>(y.numel()) * 4 + x.numel() * 4;
    autograd::backward(autograd::sum(y));
  }
  for (const Tensor& p : block.parameters()) {
    auto g = p.grad().to_vector();
    plain_grads.insert(plain_grads.end(), g.begin(), g.end());
  }
  s.btc = B * T * C;
  const std::int64_t btc = s.btc, bhtt = B * H * T * T, bt = B * T;
  std::printf("saved for backward by one block: %lld bytes (measured; its output y left out, its input x counted: "
              "ln_1 keeps it)\n", static_cast<long long>(held));
  std::printf("  ln_1: x (B,T,C) + mean, rstd (B,T)        c_attn: ln_1's output (B,T,C)\n"
              "  q, k, v: 3 x (B,H,T,hs) = 3 (B,T,C)       softmax: probabilities (B,H,T,T) (the scores die)\n"
              "  c_proj: heads merged (B,T,C)              ln_2: h = x + attn (B,T,C) + mean, rstd (B,T)\n"
              "  c_fc: ln_2's output (B,T,C)               gelu: its input (B,T,4C)   mlp c_proj: gelu's output (B,T,4C)\n");
  const std::int64_t formula = 4 * (16 * btc + bhtt + 4 * bt);
  std::printf("formula 4·(16·BTC + B·H·T² + 4·BT) = 4·(16·%lld + %lld + 4·%lld) = %lld bytes  %s\n",
              static_cast<long long>(btc), static_cast<long long>(bhtt), static_cast<long long>(bt),
              static_cast<long long>(formula), formula == held ? "(= measured)" : "(DIFFERENT)");
  std::printf("Korthikanti without dropout (34 - 2 masks = 32 sbh, 5 - 3 = 2 as²b, 2-byte) is 16·BTC + B·H·T² "
              "elements: ours in f32, plus the LayerNorms' 4·BT statistics\n");
}

void autograd_checkpoint_on_that_block(lesson::Beats& beats, State& s) {
  beats.beat("autograd::checkpoint on that block",
             "checkpoint(fn, {x}) runs fn without recording a graph and returns y through ONE node that keeps\n"
             "x. Its backward runs fn again, this time recording, and differentiates that.");
  nn::Block& block = *s.block;
  const Tensor& x = s.x;
  const std::int64_t held = s.held, btc = s.btc;
  const std::vector<float>& plain_grads = s.plain_grads;
  for (Tensor p : block.parameters()) p.set_grad(Tensor());  // handles: the parameters themselves
  std::int64_t held_ckpt = 0;
  {
    TagScope tag(MemTag::activation);
    const std::int64_t before = activation_now();
    Tensor y = autograd::checkpoint([&](const std::vector<Tensor>& in) { return block.forward(in[0]); }, {x});
    held_ckpt = activation_now() - before - static_cast<std::int64_t>(y.numel()) * 4 + x.numel() * 4;
    autograd::backward(autograd::sum(y));  // recompute + differentiate: block's .grad filled
  }
  std::vector<float> ckpt_grads;
  for (const Tensor& p : block.parameters()) {
    auto g = p.grad().to_vector();
    ckpt_grads.insert(ckpt_grads.end(), g.begin(), g.end());
  }
  std::printf("saved for backward with checkpoint: %lld bytes = x (B,T,C) only, 4·BTC = %lld  (%.1fx less)\n",
              static_cast<long long>(held_ckpt), static_cast<long long>(4 * btc),
              static_cast<double>(held) / static_cast<double>(std::max<std::int64_t>(1, held_ckpt)));
  std::printf("gradients of all %zu block parameters (%zu numbers): %s to the plain run\n", block.parameters().size(),
              ckpt_grads.size(), ckpt_grads == plain_grads ? "bit-identical" : "DIFFERENT");
}

void memory_and_time_per_segment_size(lesson::Beats& beats, const Options& opt) {
  beats.beat("memory and time per segment_size",
             "Segments of k blocks: the L/k segment inputs x stay all step; in backward one segment at a time\n"
             "is recomputed, holding k blocks' activations a. Memory ≈ ⌈L/k⌉·x + k·a, minimal near\n"
             "k* = sqrt(L·x/a) (Chen et al.'s sqrt(L) rule when a ≈ x). Cost: one more forward.");
  const nn::GPTConfig g = runtime::model_config(runtime::Config::from_json(bench_config(opt.model, 0), 1, "lesson-08"), 64);
  const std::int64_t L = g.n_layer, gbtc = 8 * g.block_size * g.n_embd;  // micro-batch 8
  const std::int64_t xa = 4 * gbtc, a = 4 * (16 * gbtc + 8 * g.n_head * g.block_size * g.block_size + 4 * 8 * g.block_size);
  std::printf("GPT %s (L = %lld), 8 x %lld tokens, one thread: x = %.2f MiB, a = %.2f MiB (beat 1's formula)\n"
              "  %-12s %16s %8s %10s %8s %26s\n", opt.model.c_str(), static_cast<long long>(L),
              static_cast<long long>(g.block_size), mib(xa), mib(a), "segment_size", "activation peak", "vs off",
              "ms/step", "vs off", "⌈L/k⌉·x + k·a");
  set_num_threads(1);
  std::int64_t peak_off = 0;
  double ms_off = 0;
  std::vector<float> losses_off;
  for (long long k = 0; k <= L; ++k) {
    runtime::Config cfg = runtime::Config::from_json(bench_config(opt.model, k), 1, "lesson-08");
    Generator init(cfg.training.seed), tok(7);
    auto tokens = std::make_shared<std::vector<std::int32_t>>(100000);
    for (auto& t : *tokens) t = static_cast<std::int32_t>(tok.next_u64() % 64);
    auto engine = runtime::initialize(std::make_shared<nn::GPT>(runtime::model_config(cfg, 64), init), cfg, nullptr);
    data::BatchSampler sampler(tokens, 8, cfg.model.block_size, 1337);
    std::vector<float> losses;
    std::int64_t peak = 0;
    double best_ms = 1e300;
    for (int s = 0; s < 3; ++s) {  // step 0 warms up (AdamW's states); the best of the next two
      reset_peak_memory();
      const std::int64_t before = activation_now();
      auto t0 = std::chrono::steady_clock::now();
      losses.push_back(engine->train_batch(sampler));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (s > 0) best_ms = std::min(best_ms, ms);
      peak = std::max(peak, memory_stats().peak(MemTag::activation) - before);
    }
    if (k == 0) peak_off = peak, ms_off = best_ms, losses_off = losses;
    // off: all L blocks' a; k: ceil(L/k) segment inputs x and one segment's k blocks recomputed at a time
    const double model = k == 0 ? mib(L * a) : mib((L + k - 1) / k * xa + k * a);
    std::printf("  %-12s %12.2f MiB %7.2fx %10.1f %7.2fx %14.2f MiB  %s\n", k == 0 ? "off" : std::to_string(k).c_str(),
                mib(peak), static_cast<double>(peak_off) / static_cast<double>(peak), best_ms, best_ms / ms_off, model,
                losses == losses_off ? "losses bit-identical" : "losses DIFFERENT");
  }
  set_num_threads(0);
  std::printf("a / x = %.1f: a block keeps far more than it takes in, so k* = sqrt(L·x/a) = %.2f < 1 and segments\n"
              "of 1 block win (the sqrt(L) rule assumes a ≈ x). The peak also holds the logits and the loss's\n"
              "tensors, which no segment size changes.\n",
              static_cast<double>(a) / static_cast<double>(xa), std::sqrt(static_cast<double>(L * xa) / static_cast<double>(a)));
}

void training_the_baby_gpt_with_activation_checkpointing_on(lesson::Beats& beats, const Options& opt, const State& s) {
  beats.beat("training the baby GPT with activation checkpointing on",
             "Lesson 03's run through runtime::Engine, twice: `activation_checkpointing` {enabled: true,\n"
             "segment_size: 1} and off. The recompute repeats the same ops: the same losses, bit for bit.");
  const nn::GPTConfig& baby = s.baby;
  const long long steps = opt.steps, eval_iters = beats.quick() ? 2 : 20;
  auto ds = data::TextDataset::load(opt.data, "char", baby.block_size);
  const std::int64_t V = ds.tokenizer().vocab_size();
  struct Run {
    std::unique_ptr<runtime::Engine> engine;
    std::unique_ptr<data::BatchSampler> train, val;
    std::vector<float> losses;
  };
  auto make = [&](long long segment) {
    runtime::Config cfg = runtime::Config::from_json(baby_config(steps, eval_iters, segment), 1, "lesson-08 (baby)");
    Generator init(cfg.training.seed);
    Run r;
    r.engine = runtime::initialize(std::make_shared<nn::GPT>(runtime::model_config(cfg, V), init), cfg);
    r.train = std::make_unique<data::BatchSampler>(ds.tokens_ptr(data::Split::train), 32, baby.block_size, cfg.training.seed);
    r.val = std::make_unique<data::BatchSampler>(ds.tokens_ptr(data::Split::val), 32, baby.block_size, cfg.training.seed + 1);
    return r;
  };
  Run on = make(1), off = make(0);
  std::printf("%lld steps x 32 x 64 tokens\n%6s %18s %18s\n", steps, "step", "loss (checkpointed)", "loss (plain)");
  for (long long step = 1; step <= steps; ++step) {
    on.losses.push_back(on.engine->train_batch(*on.train));
    off.losses.push_back(off.engine->train_batch(*off.train));
    if (step % 20 == 0 || step == 1 || step == steps)
      std::printf("%6lld %18.6f %18.6f\n", step, static_cast<double>(on.losses.back()), static_cast<double>(off.losses.back()));
  }
  std::printf("all %lld losses: %s\n", steps, on.losses == off.losses ? "bit-identical" : "DIFFERENT");
  const float val_on = on.engine->evaluate(*on.val, eval_iters), val_off = off.engine->evaluate(*off.val, eval_iters);
  std::printf("val loss: checkpointed %.4f, plain %.4f (the plain run is lesson 03's: its final val loss with "
              "--steps %lld%s)\n", static_cast<double>(val_on), static_cast<double>(val_off), steps,
              beats.quick() ? " --quick" : "");
}

// The lesson: its four beats in order; main() below parses the options and runs it.
int run(lesson::Beats& beats, Options& opt) {
  if (!std::filesystem::exists(opt.data))
    throw lesson::UsageError("data file '" + opt.data + "' not found. Make it with `make data`, or pass --data FILE");
  State s;
  a_blocks_activations_measured_and_counted(beats, s);
  autograd_checkpoint_on_that_block(beats, s);
  memory_and_time_per_segment_size(beats, opt);
  training_the_baby_gpt_with_activation_checkpointing_on(beats, opt, s);
  std::printf("\nLesson 08 done.\n");
  return 0;
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_one_process(argc, argv, "Lesson 08: activation checkpointing", 4, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of beat 4", /*quick=*/20);
    beats.option("--model", opt.model, "NAME", "beat 3's GPT (baby, small); --quick uses baby");
  }, [&](lesson::Beats& beats) {
    if (beats.quick() && !beats.given("--model")) opt.model = "baby";
    return run(beats, opt);
  });
}
