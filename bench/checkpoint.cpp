// bench-checkpoint: what activation checkpointing buys and costs. build/bin/bench-checkpoint [--steps N] [--rounds R]
// One rank, one thread, the baby (4 blocks) and the small (6 blocks) GPT: without checkpointing and with
// segments of 1, 2, ..., L blocks (config activation_checkpointing.segment_size). Per setting: the peak of
// the allocator's `activation` bytes during a training step (the same every step), the median step time
// over R alternating rounds (a busy moment of the machine hits every setting alike), and the losses,
// which must be bit-identical to the run without checkpointing (the recompute repeats the same ops).
// Targets (issue: small, segments of 1): activation peak >= 3x lower, step time <= 1.4x.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "data/batch_sampler.h"
#include "minitorch/allocator.h"
#include "minitorch/parallel.h"
#include "minitorch/random.h"
#include "runtime/config.h"
#include "runtime/engine.h"

using namespace minitorch;

namespace {

std::string config(const std::string& model, long long micro, long long segment) {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro) + R"(, "gradient_accumulation_steps": 1,
    "gradient_clipping": 1.0, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.1}},
    "activation_checkpointing": {"enabled": )" + (segment > 0 ? "true" : "false") +
         R"(, "segment_size": )" + std::to_string(std::max(1LL, segment)) + R"(},
    "model": {"name": ")" + model + R"(", "vocab_size": 64}, "training": {"seed": 1337}})";
}

struct Setting {
  long long segment;  // 0 = off
  std::unique_ptr<runtime::Engine> engine;
  std::unique_ptr<data::BatchSampler> sampler;
  std::vector<double> ms;
  std::vector<float> losses;
  std::int64_t peak = 0;
};

void bench_model(const std::string& model, long long micro, long long steps, long long rounds) {
  std::vector<Setting> settings;
  Generator gen(7);
  auto tokens = std::make_shared<std::vector<std::int32_t>>(400000);
  for (auto& t : *tokens) t = static_cast<std::int32_t>(gen.next_u64() % 64);
  const runtime::Config plain = runtime::Config::from_json(config(model, micro, 0), 1, "bench-checkpoint");
  const long long L = plain.model.n_layer, T = plain.model.block_size;
  for (long long segment = 0; segment <= L; ++segment) {
    runtime::Config cfg = runtime::Config::from_json(config(model, micro, segment), 1, "bench-checkpoint");
    Generator init(cfg.training.seed);
    std::shared_ptr<nn::GPT> gpt;
    {
      TagScope scope(MemTag::param);
      gpt = std::make_shared<nn::GPT>(runtime::model_config(cfg, 64), init);
    }
    Setting s;
    s.segment = segment;
    s.engine = runtime::initialize(gpt, cfg, nullptr);
    s.sampler = std::make_unique<data::BatchSampler>(tokens, micro, T, 1337);
    settings.push_back(std::move(s));
  }
  // A step's activation peak: what the `activation` tag reaches above what it held before the step.
  auto run_step = [](Setting& s, bool timed) {
    reset_peak_memory();
    const std::int64_t before = memory_stats().current(MemTag::activation);
    auto t0 = std::chrono::steady_clock::now();
    s.losses.push_back(s.engine->train_batch(*s.sampler));
    if (timed) s.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    s.peak = std::max(s.peak, memory_stats().peak(MemTag::activation) - before);
  };
  for (auto& s : settings) run_step(s, false);  // warm-up (AdamW's states appear)
  for (long long r = 0; r < rounds; ++r)
    for (auto& s : settings)
      for (long long k = 0; k < steps; ++k) run_step(s, true);

  std::printf("bench-checkpoint: %s GPT (%lld blocks, psi = %lld), micro-batch %lld x %lld tokens, 1 thread, "
              "median of %lld steps in %lld alternating rounds\n",
              model.c_str(), L, static_cast<long long>(settings[0].engine->model().num_parameters()), micro, T,
              rounds * steps, rounds);
  std::printf("  %-16s %14s %9s %12s %9s  %s\n", "segment_size", "activation peak", "vs off", "ms/step", "vs off",
              "losses vs off");
  const double base_ms = bench::median(settings[0].ms);
  for (const auto& s : settings) {
    const bool same = s.losses == settings[0].losses;
    std::printf("  %-16s %11.2f MiB %8.2fx %12.1f %8.2fx  %s\n",
                s.segment == 0 ? "off" : std::to_string(s.segment).c_str(), s.peak / 1048576.0,
                static_cast<double>(settings[0].peak) / s.peak, bench::median(s.ms), bench::median(s.ms) / base_ms,
                same ? "bit-identical" : "DIFFERENT");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const long long steps = bench::arg(argc, argv, "--steps", 2), rounds = bench::arg(argc, argv, "--rounds", 3);
  set_num_threads(1);
  bench_model("baby", 16, steps, rounds);
  bench_model("small", 4, steps, rounds);
  return 0;
}
