// bench-pipeline: the bubble of a 4-stage pipeline as the micro-batches grow, measured against
// (P − 1)/(M + P − 1), and its throughput against one rank accumulating the same micro-batches.
//   build/bin/bench-pipeline --single [--steps S] [--rounds R]          one rank: the baseline, M in {1..16}
//   mpirun -np 4 build/bin/bench-pipeline [--steps S] [--rounds R]      4 stages × 1 replica, both schedules
// The baby GPT (4 blocks: one per stage, uniform), micro-batches of 4 × 64 tokens, one thread per rank.
// Each setting runs R times (a fresh engine each, 1 + S steps; the first step is not measured); the
// figures are the medians over the R runs. The single run prints tokens/s per M; the pipelined run
// reads them back from --baseline (what `make bench-pipeline` passes) to print the ratio.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "data/batch_sampler.h"
#include "dist/process_group.h"
#include "minitorch/parallel.h"
#include "minitorch/random.h"
#include "pipeline/engine.h"

using namespace minitorch;

namespace {

constexpr long long kMicro = 4;

std::string config(int stages, long long M, const std::string& schedule) {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(kMicro) + R"(, "gradient_accumulation_steps": )" +
         std::to_string(M) + R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.1}},
    "pipeline": {"stages": )" + std::to_string(stages) + R"(, "schedule": ")" + schedule +
         R"(", "partition_method": "uniform"}, "model": {"name": "baby", "vocab_size": 64}, "training": {"seed": 1337}})";
}

std::shared_ptr<nn::GPT> build_model(const runtime::Config& cfg) {
  Generator init(cfg.training.seed);
  TagScope scope(MemTag::param);
  return std::make_shared<nn::GPT>(runtime::model_config(cfg, 64), init);
}

std::shared_ptr<std::vector<std::int32_t>> random_tokens() {
  Generator gen(7);
  auto tokens = std::make_shared<std::vector<std::int32_t>>(400000);
  for (auto& t : *tokens) t = static_cast<std::int32_t>(gen.next_u64() % 64);
  return tokens;
}

const std::vector<long long> kMicroBatches = {1, 2, 4, 8, 16};

/// Tokens per second of one rank training the whole model with M-step accumulation.
void single(long long steps, long long rounds, const std::string& out) {
  auto tokens = random_tokens();
  std::map<long long, double> tps;
  std::printf("bench-pipeline --single: one rank, the whole baby GPT, %lld-step accumulation; median of %lld runs\n",
              steps, rounds);
  std::printf("  %4s %12s\n", "M", "tokens/s");
  for (long long M : kMicroBatches) {
    std::vector<double> runs;
    for (long long r = 0; r < rounds; ++r) {
      const runtime::Config cfg = runtime::Config::from_json(config(1, M, "1f1b"), 1, "bench-pipeline");
      auto engine = runtime::initialize(build_model(cfg), cfg, nullptr);
      data::BatchSampler sampler(tokens, kMicro, cfg.model.block_size, 1337);
      engine->train_batch(sampler);
      const auto t0 = std::chrono::steady_clock::now();
      for (long long s = 0; s < steps; ++s) engine->train_batch(sampler);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      runs.push_back(static_cast<double>(steps * M * kMicro * cfg.model.block_size) / secs);
    }
    tps[M] = bench::median(runs);
    std::printf("  %4lld %12.0f\n", M, tps[M]);
  }
  std::ofstream f(out);
  for (auto& [M, v] : tps) f << M << " " << v << "\n";
  std::printf("wrote %s\n", out.c_str());
}

void pipelined(long long steps, long long rounds, const std::string& baseline_path) {
  dist::ProcessGroup& world = dist::world();
  std::map<long long, double> base;
  {
    std::ifstream f(baseline_path);
    long long M;
    double v;
    while (f >> M >> v) base[M] = v;
  }
  auto tokens = random_tokens();
  const int P = world.size();
  if (world.rank() == 0)
    std::printf("bench-pipeline: %d stages x 1 replica, the baby GPT (one block per stage), micro-batches of %lld x 64 "
                "tokens, 1 thread per rank; median of %lld runs of %lld measured steps\n",
                P, kMicro, rounds, steps);
  if (world.rank() == 0)
    std::printf("  %-6s %4s %16s %16s %10s %14s %10s\n", "sched", "M", "bubble measured", "formula", "peak live",
                "tokens/s", "vs 1 rank");
  for (const char* schedule : {"gpipe", "1f1b"})
    for (long long M : kMicroBatches) {
      std::vector<double> bubble, tps;
      int peak = 0;
      double formula = 0;
      for (long long r = 0; r < rounds; ++r) {
        const runtime::Config cfg = runtime::Config::from_json(config(P, M, schedule), P, "bench-pipeline");
        pipeline::PipelineEngine pipe(build_model(cfg), cfg, world);
        data::BatchSampler sampler(tokens, kMicro, cfg.model.block_size, 1337);
        pipe.train_batch(sampler);
        const auto t0 = std::chrono::steady_clock::now();
        for (long long s = 0; s < steps; ++s) pipe.train_batch(sampler);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const pipeline::PipelineMeasure m = pipe.measure();
        bubble.push_back(m.bubble_measured);
        tps.push_back(static_cast<double>(steps * M * kMicro * cfg.model.block_size) / secs);
        peak = m.stages[0].peak_live;
        formula = m.bubble_formula;
      }
      const double t = bench::median(tps);
      if (world.rank() == 0) {
        char ratio[32] = "-";
        if (base.count(M)) std::snprintf(ratio, sizeof ratio, "%.2fx", t / base[M]);
        std::printf("  %-6s %4lld %16.3f %16.3f %10d %14.0f %10s\n", schedule, M, bench::median(bubble), formula, peak,
                    t, ratio);
        std::fflush(stdout);
      }
    }
}

}  // namespace

int main(int argc, char** argv) {
  const long long steps = bench::arg(argc, argv, "--steps", 4), rounds = bench::arg(argc, argv, "--rounds", 3);
  std::string baseline = "build/bench-pipeline-single.txt";
  bool one = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--single") one = true;
    if (std::string(argv[i]) == "--baseline" && i + 1 < argc) baseline = argv[i + 1];
  }
  set_num_threads(1);
  if (one) {
    single(steps, rounds, baseline);
    return 0;
  }
  dist::init(&argc, &argv);
  pipelined(steps, rounds, baseline);
  dist::finalize();
  return 0;
}
