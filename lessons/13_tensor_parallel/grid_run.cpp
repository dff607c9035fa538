// Lesson 13, beat 6 (grid_run.h): one run on the 3D grid and the same run as DDP, through the trainer the tools
// build (pipeline::make_trainer), so what the lesson shows is what `minitorch-train --config configs/grid3d.json`
// runs.
#include "grid_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "pipeline/make_trainer.h"
#include "runtime/engine.h"
#include "runtime/plan.h"

using namespace minitorch;

namespace lesson13 {

namespace {

constexpr long long kMicro = 4;  // sequences per micro-batch, every rank, both runs

/// Lesson 05's run (AdamW, warmup-decay LR, clip 1.0, seed 1337) with `stages` × `tensor` model ranks and
/// `accumulation` micro-batches per data rank.
std::string run_config(long long steps, int stages, int tensor, long long accumulation) {
  const long long warmup = std::max(1LL, steps / 10);
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(kMicro) + R"(, "gradient_accumulation_steps": )" +
         std::to_string(accumulation) + R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 2e-3, "warmup_num_steps": )" +
         std::to_string(warmup) + R"(, "total_num_steps": )" + std::to_string(steps) + R"(}},
    "zero_optimization": {"stage": 0},
    "pipeline": {"stages": )" + std::to_string(stages) + R"(},
    "tensor_parallel": {"autotp_size": )" + std::to_string(tensor) + R"(},
    "model": {"name": "baby"},
    "training": {"steps": )" + std::to_string(steps) + R"(, "seed": 1337, "tokenizer": "char"}})";
}

struct Trained {
  std::vector<float> losses;
  double ms_per_step = 0;
  std::string grid;  // the plan's one line
};

/// `steps` optimizer steps of `json` on `world`, the model drawn from the config's seed.
Trained train(dist::ProcessGroup& world, const data::TextDataset& ds, const std::string& json, const std::string& name,
              long long steps) {
  const runtime::Config cfg = runtime::Config::from_json(json, world.size(), name);
  const runtime::Plan plan = runtime::make_plan(cfg);
  std::shared_ptr<nn::GPT> model;
  {
    Generator init(cfg.training.seed);
    TagScope scope(MemTag::param);
    model = std::make_shared<nn::GPT>(runtime::model_config(cfg, ds.tokenizer().vocab_size()), init);
  }
  auto trainer = pipeline::make_trainer(std::move(model), cfg, plan, world);
  const data::BatchSampler sampler(ds.tokens_ptr(data::Split::train), kMicro, cfg.model.block_size, cfg.training.seed);
  Trained out;
  out.grid = plan.describe();
  const auto t0 = std::chrono::steady_clock::now();
  for (long long s = 0; s < steps; ++s) out.losses.push_back(trainer->train_batch(sampler));
  out.ms_per_step = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                    static_cast<double>(steps);
  return out;
}

}  // namespace

// world: N ranks; both runs' global batch: 4·N sequences of 64 tokens
void kjv_run_on_the_grid(lesson::Beats& beats, dist::ProcessGroup& world, const std::string& data, long long steps) {
  beats.beat("lesson 05's KJV run on the grid, beside DDP",
             "The baby GPT on the KJV, lesson 05's optimizer and schedule, twice with one global batch of 4·N\n"
             "sequences: on the grid (each block's matrices split over 2 tensor ranks, 2 pipeline stages when the\n"
             "ranks allow, the rest data-parallel, each data rank accumulating N/d micro-batches of 4), and as DDP over\n"
             "the N ranks (one micro-batch of 4 each). Both draw the same micro-batches: the grid must give DDP's\n"
             "losses, up to the order of float sums. Both go through pipeline::make_trainer, as minitorch-train does.");
  const int N = world.size(), stages = N % 4 == 0 ? 2 : 1, tensor = 2, d = N / (stages * tensor);
  const data::TextDataset ds = data::TextDataset::load(data, "char", 64);
  const Trained grid = train(world, ds, run_config(steps, stages, tensor, N / d), "lesson-13 (grid)", steps);
  const Trained ddp = train(world, ds, run_config(steps, 1, 1, 1), "lesson-13 (DDP)", steps);
  if (world.rank() != 0) return;
  std::printf("grid: %s\nDDP:  %s\n\n", grid.grid.c_str(), ddp.grid.c_str());
  std::printf("step    grid loss   DDP loss   rel. diff\n");
  double worst = 0;
  for (long long s = 1; s <= steps; ++s) {
    const float g = grid.losses[static_cast<std::size_t>(s - 1)], p = ddp.losses[static_cast<std::size_t>(s - 1)];
    const double rel = std::abs(g - p) / std::abs(p);
    worst = std::max(worst, rel);
    if (s == 1 || s % 20 == 0 || s == steps)
      std::printf("%4lld   %9.4f  %9.4f   %.1e\n", s, static_cast<double>(g), static_cast<double>(p), rel);
  }
  std::printf("largest relative loss difference over %lld steps: %.1e %s\n", steps, worst,
              worst < 1e-4 ? "(the same training)" : "(DIFFERENT: more than 1e-4)");
  std::printf("time per step: grid %.0f ms, DDP %.0f ms (%d ranks on this machine's cores; tensor parallelism pays\n"
              "its all-reduces to fit what one rank cannot hold, not to beat DDP on a model that fits)\n",
              grid.ms_per_step, ddp.ms_per_step, N);
  std::fflush(stdout);
}

}  // namespace lesson13
