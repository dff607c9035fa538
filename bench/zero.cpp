// bench-zero: what sharding costs in time. mpirun -np 2 build/bin/bench-zero [--steps N] [--micro B]
// The baby and the small GPT, 1 thread per rank, the same per-rank batch: DDP (stage 0) and each
// implemented ZeRO stage train side by side in alternating rounds (so a busy moment of the machine
// hits them alike), and rank 0 prints each stage's median step time relative to DDP's.
// Targets (docs/design.md §8): ZeRO-1 and -2 <= 1.10 x DDP, ZeRO-3 <= 1.35 x DDP. ZeRO-3 shards every
// tensor here (persistence threshold 0) and prefetches about one block ahead.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "data/batch_sampler.h"
#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "minitorch/parallel.h"
#include "minitorch/random.h"
#include "runtime/config.h"
#include "runtime/config_keys.h"
#include "runtime/engine.h"

using namespace minitorch;

namespace {
std::string config(const std::string& model, long long micro, int world, int stage) {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro) + R"(, "gradient_accumulation_steps": 1,
    "train_batch_size": )" + std::to_string(micro * world) + R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.1}},
    "zero_optimization": {"stage": )" + std::to_string(stage) + R"(, "reduce_bucket_size": 200000, "overlap_comm": true,
      "stage3_param_persistence_threshold": 0, "stage3_prefetch_bucket_size": 200000},
    "model": {"name": ")" + model + R"(", "vocab_size": 64}, "training": {"seed": 1337}})";
}

/// Rank 0 prints one line per stage: median step time and its ratio to DDP's.
void bench_model(const std::string& model, long long micro, long long steps, dist::ProcessGroup& world) {
  const int N = world.size();
  std::vector<int> stages;
  for (int s = 0; s <= 3; ++s)
    if (runtime::zero_stage_status(s) == runtime::KeyStatus::implemented) stages.push_back(s);
  std::vector<std::unique_ptr<runtime::Engine>> engines;
  std::int64_t block = 0;
  for (int s : stages) {
    runtime::Config cfg = runtime::Config::from_json(config(model, micro, N, s), N, "bench-zero");
    Generator init(cfg.training.seed);
    std::shared_ptr<nn::GPT> gpt;
    {
      TagScope scope(MemTag::param);
      gpt = std::make_shared<nn::GPT>(runtime::model_config(cfg, 64), init);
    }
    block = cfg.model.block_size;
    engines.push_back(runtime::initialize(gpt, cfg, &world));
  }
  // Random token ids: the benchmark measures time, not learning.
  Generator gen(7);
  auto tokens = std::make_shared<std::vector<std::int32_t>>(400000);
  for (auto& t : *tokens) t = static_cast<std::int32_t>(gen.next_u64() % 64);
  data::BatchSampler sampler(tokens, micro, block, 1337);

  std::vector<bench::Timed> timed(engines.size()), warm(engines.size());
  for (std::size_t i = 0; i < engines.size(); ++i) bench::time_steps(*engines[i], sampler, 2, warm[i]);
  const long long rounds = 4, per_round = std::max(1LL, steps / rounds);
  for (long long r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < engines.size(); ++i) {
      world.barrier();
      bench::time_steps(*engines[i], sampler, per_round, timed[i]);
    }
  if (world.rank() != 0) return;
  std::printf("bench-zero: %s GPT (psi = %lld), micro-batch %lld x %lld tokens per rank, %d ranks x 1 thread, "
              "median of %lld steps each\n",
              model.c_str(), static_cast<long long>(engines[0]->model().num_parameters()), micro,
              static_cast<long long>(block), N, rounds * per_round);
  const double ddp = timed[0].med_step();
  for (std::size_t i = 0; i < engines.size(); ++i)
    std::printf("  %-7s %8.2f ms/step  x%.3f DDP  (%s)\n", engines[i]->strategy().name().c_str(), timed[i].med_step(),
                timed[i].med_step() / ddp, timed[i].breakdown().c_str());
  std::printf("  targets: ZeRO-1, ZeRO-2 <= 1.10 x DDP; ZeRO-3 <= 1.35 x DDP%s\n",
              stages.size() < 4 ? " (stages not listed are not implemented yet)" : "");
}
}  // namespace

int main(int argc, char** argv) {
  dist::ProcessGroup& world = dist::init(&argc, &argv);
  const long long steps = bench::arg(argc, argv, "--steps", 20), micro = bench::arg(argc, argv, "--micro", 8);
  set_num_threads(1);
  bench_model("baby", micro, steps, world);
  bench_model("small", std::max(1LL, micro / 4), std::max(4LL, steps / 4), world);
  return 0;
}
