// bench-ddp: what data parallelism costs. mpirun -np 2 build/bin/bench-ddp [--steps N] [--micro B] [--bucket E]
// The baby GPT, 1 thread per rank, the same per-rank batch: first every rank trains alone (one
// single-rank engine per process, side by side, so both runs load the cores alike), then the ranks
// train together with DDP. Rank 0 prints the median step times and their ratio (target <= 1.10), and
// how much of the all-reduce time backward hid.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_sampler.h"
#include "dist/ddp.h"
#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "minitorch/parallel.h"
#include "minitorch/random.h"
#include "runtime/config.h"
#include "runtime/engine.h"
#include "zero/stage0.h"
#include "bench_util.h"

using namespace minitorch;

namespace {
using bench::arg;
using bench::median;
using bench::Timed;
using bench::time_steps;

std::string config(long long micro, int world, long long bucket) {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro) + R"(, "gradient_accumulation_steps": 1,
    "train_batch_size": )" + std::to_string(micro * world) + R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.1}},
    "zero_optimization": {"stage": 0, "reduce_bucket_size": )" + std::to_string(bucket) + R"(},
    "model": {"name": "baby", "vocab_size": 64}, "training": {"seed": 1337}})";
}

}  // namespace

int main(int argc, char** argv) {
  dist::ProcessGroup& world = dist::init(&argc, &argv);
  const long long steps = arg(argc, argv, "--steps", 20), micro = arg(argc, argv, "--micro", 8);
  const long long bucket = arg(argc, argv, "--bucket", 200000);
  set_num_threads(1);
  const int N = world.size();

  // Random token ids: the benchmark measures time, not learning.
  Generator gen(7);
  auto tokens = std::make_shared<std::vector<std::int32_t>>(200000);
  for (auto& t : *tokens) t = static_cast<std::int32_t>(gen.next_u64() % 64);
  data::BatchSampler sampler(tokens, micro, 64, 1337);

  auto build = [&](int world_size, dist::ProcessGroup* group) {
    runtime::Config cfg = runtime::Config::from_json(config(micro, world_size, bucket), world_size, "bench-ddp");
    Generator init(cfg.training.seed);
    std::shared_ptr<nn::GPT> model;
    {
      TagScope scope(MemTag::param);
      model = std::make_shared<nn::GPT>(runtime::model_config(cfg, 64), init);
    }
    return runtime::initialize(model, cfg, group);
  };

  // Every rank alone (no communication, all at the same time) and together (DDP over the world
  // group), in alternating rounds so that a busy moment of the machine hits both alike.
  auto single_engine = build(1, nullptr);
  auto ddp_engine = build(N, &world);
  Timed warm, alone, together;
  time_steps(*single_engine, sampler, 2, warm);
  time_steps(*ddp_engine, sampler, 2, warm);
  const long long rounds = 4, per_round = std::max(1LL, steps / rounds);
  for (long long r = 0; r < rounds; ++r) {
    world.barrier();
    time_steps(*single_engine, sampler, per_round, alone);
    world.barrier();
    time_steps(*ddp_engine, sampler, per_round, together);
  }
  // 3. The same bucket all-reduces with no backward to hide under.
  std::vector<Tensor> bufs;
  for (const auto& b : ddp_engine->strategy_as<zero::Stage0>()->ddp()->buckets()) bufs.push_back(Tensor::zeros({b.numel()}));
  std::vector<double> comm;
  for (int rep = 0; rep < 7; ++rep) {
    world.barrier();
    auto t0 = std::chrono::steady_clock::now();
    for (Tensor& t : bufs) world.all_reduce(t, dist::ReduceOp::avg);
    comm.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const double comm_ms = median(comm);

  if (world.rank() == 0) {
    const std::int64_t psi = ddp_engine->model().num_parameters();
    std::printf("bench-ddp: baby GPT (psi = %lld), micro-batch %lld x 64 tokens per rank, 1 thread per rank, "
                "%zu buckets of <= %lld elements, median of %lld steps each\n",
                static_cast<long long>(psi), micro, bufs.size(), bucket, rounds * per_round);
    std::printf("1 rank  x 1 thread (x %d side by side): %8.2f ms/step (%s)\n", N, alone.med_step(),
                alone.breakdown().c_str());
    std::printf("%d ranks x 1 thread, DDP:              %8.2f ms/step (%s)\n", N, together.med_step(),
                together.breakdown().c_str());
    std::printf("all-reduce of all buckets alone: %.2f ms (%lld bytes per rank); hidden under backward: %.0f%%\n",
                comm_ms, static_cast<long long>(2 * (N - 1) * psi * 4 / N),
                100.0 * std::max(0.0, 1.0 - together.med_exposed() / std::max(comm_ms, 1e-9)));
    std::printf("DDP overhead ratio (median step time, %d ranks / 1 rank): %.3f  (target <= 1.10)\n", N,
                together.med_step() / alone.med_step());
  }
  return 0;
}
