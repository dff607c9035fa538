// Lesson 05: data parallelism. mpirun -np 4 build/bin/lesson-05 [--auto] [--quick] [--beat N] [--data TEXT]
// [--steps N] [--bucket ELEMENTS] (make lesson-05 starts it on 4 ranks)
// Every rank holds the whole baby GPT and trains on its own micro-batches; DDP averages the gradients
// in buckets whose all-reduces start from the gradient hooks while backward is still running. The
// lesson runs the ring all-reduce step by step (watched_ring.cpp), shows the buckets, when each fired
// on each rank, what every rank holds after backward and after the all-reduce (the step's frames,
// common/frames.h), the bytes each rank sent against 2(N-1)/N·Ψ·4, and trains on N ranks against the
// one-rank run with the same global batch.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/beat.h"
#include "common/frames.h"
#include "common/ranks.h"
#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "dist/ddp.h"
#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "minitorch/events.h"
#include "minitorch/parallel.h"
#include "runtime/config.h"
#include "runtime/engine.h"
#include "zero/stage0.h"
#include "watched_ring.h"

using namespace minitorch;

namespace {
using lesson05::gather;

// configs/ddp.json, inline: lesson 03's run (batch 32 = micro 8 × N ranks for N = 4), `micro` per rank
// and `accum` micro-steps, with the step count filled in.
std::string ddp_config(long long steps, long long micro, long long accum, long long bucket) {
  const long long warmup = std::max(1LL, steps / 12);
  return R"({
    "train_micro_batch_size_per_gpu": )" + std::to_string(micro) + R"(, "gradient_accumulation_steps": )" +
         std::to_string(accum) + R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 2e-3,
                  "warmup_num_steps": )" + std::to_string(warmup) + R"(, "total_num_steps": )" +
         std::to_string(steps) + R"(, "warmup_type": "linear"}},
    "zero_optimization": {"stage": 0, "reduce_bucket_size": )" + std::to_string(bucket) + R"(},
    "model": {"name": "baby"},
    "training": {"steps": )" + std::to_string(steps) + R"(, "eval_iters": 20, "seed": 1337, "tokenizer": "char"}
  })";
}

std::shared_ptr<nn::GPT> make_model(const runtime::Config& cfg, std::int64_t V, std::uint64_t seed) {
  Generator init(seed);
  TagScope scope(MemTag::param);
  return std::make_shared<nn::GPT>(runtime::model_config(cfg, V), init);
}

struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 200, bucket = 200000;
};
}  // namespace


// What the beats hand on: the run's config, data and sampler, the engine (its DDP holds the buckets),
// the traffic of beat 6's step, and the N-rank run's losses for beat 9.
struct State {
  State(const Options& opt, int N, bool quick)
      : eval_iters(quick ? 2 : 20),
        cfg(runtime::Config::from_json(ddp_config(opt.steps, 8, 1, opt.bucket), N, "lesson-05 (configs/ddp.json)")),
        ds(data::TextDataset::load(opt.data, cfg.training.tokenizer, cfg.model.block_size)),
        V(ds.tokenizer().vocab_size()),
        T(cfg.model.block_size),
        B(cfg.train_micro_batch_size_per_gpu),
        train_sampler(ds.tokens_ptr(data::Split::train), B, T, cfg.training.seed),
        train_eval(ds.tokens_ptr(data::Split::train), 32, T, cfg.training.seed + 2),  // lesson 03's
        val_eval(ds.tokens_ptr(data::Split::val), 32, T, cfg.training.seed + 1) {}
  // --quick: 2 evaluation batches instead of 20 (a noisier loss, the same comparison)
  std::int64_t eval_iters;
  runtime::Config cfg;
  data::TextDataset ds;
  std::int64_t V, T, B;
  data::BatchSampler train_sampler, train_eval, val_eval;
  std::shared_ptr<nn::GPT> model;
  std::unique_ptr<runtime::Engine> engine;
  std::int64_t step_bytes = 0, step_calls = 0;  // beat 6's step, as world.stats() recorded it
  std::vector<float> ddp_losses;                // beat 8's run on N ranks
  float ddp_val = 0;
};

void n_ranks_one_model_each(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("N ranks, one model each",
             "mpirun started N processes. Each builds the baby GPT (here from a different seed on purpose);\n"
             "the engine broadcasts rank 0's weights, so all start identical. Each rank then trains on its\n"
             "own micro-batches: global micro-batch number (step*G + micro)*N + rank.");
  const int N = world.size(), rank = world.rank();
  // Different seeds per rank: only the broadcast makes them equal.
  s.model = make_model(s.cfg, s.V, s.cfg.training.seed + 1000 * static_cast<std::uint64_t>(rank));
  const double before = s.model->named_parameters().front().second.to_vector()[0];
  s.engine = runtime::initialize(s.model, s.cfg, &world);
  auto firsts = gather(world, {static_cast<float>(before), s.model->named_parameters().front().second.to_vector()[0]});
  std::printf("%d ranks x %d thread(s); batch %lld = micro %lld x accumulation %lld x %d ranks\n", N, num_threads(),
              static_cast<long long>(s.cfg.train_batch_size), static_cast<long long>(s.B),
              static_cast<long long>(s.cfg.gradient_accumulation_steps), N);
  for (int r = 0; r < N; ++r)
    std::printf("rank %d: wte[0,0] from its own seed %+.6f -> after broadcast %+.6f\n", r, firsts[2 * r], firsts[2 * r + 1]);
}

void buckets_gradients_in_reverse_order_of_use(lesson::Beats& beats, const Options& opt, State& s) {
  beats.beat("buckets: gradients in reverse order of use",
             "Backward finishes the last layer's gradients first. DDP walks named_parameters() backwards\n"
             "and packs them into buckets of reduce_bucket_size elements (a bigger tensor gets its own);\n"
             "each bucket is one flat f32 buffer, tagged 'comm', and one all-reduce.");
  const dist::DistributedDataParallel& ddp = *s.engine->strategy_as<zero::Stage0>()->ddp();
  const auto& buckets = ddp.buckets();
  const std::int64_t psi = s.model->num_parameters();
  std::printf("psi = %lld parameters, reduce_bucket_size = %lld elements -> %zu buckets\n",
              static_cast<long long>(psi), opt.bucket, buckets.size());
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const auto& b = buckets[i];
    std::printf("bucket %zu: %7lld elements, %2zu tensors: %s", i, static_cast<long long>(b.numel()), b.names.size(),
                b.names.front().c_str());
    if (b.names.size() > 1) std::printf(" ... %s", b.names.back().c_str());
    std::printf("\n");
  }
  std::printf("comm buffers: %.2f MB = 4 psi (memory_stats, tag comm)\n",
              static_cast<double>(memory_stats().current(MemTag::comm)) / 1e6);
}

void one_step_buckets_fire_during_backward(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("one step: buckets fire during backward",
             "The hook of a bucket's last gradient copies the bucket into its buffer and starts a\n"
             "non-blocking all-reduce (average); backward keeps computing earlier layers meanwhile.\n"
             "step() then waits for what is still in flight: only that wait is exposed communication.");
  const int N = world.size();
  const dist::DistributedDataParallel& ddp = *s.engine->strategy_as<zero::Stage0>()->ddp();
  const auto& buckets = ddp.buckets();
  s.engine->train_batch(s.train_sampler);  // warm-up step (first-touch allocations)
  const dist::CommStats s0 = world.stats();
  s.engine->train_batch(s.train_sampler);
  s.step_bytes = world.stats().bytes - s0.bytes, s.step_calls = world.stats().calls - s0.calls;
  std::vector<float> mine;
  for (const auto& b : buckets) mine.push_back(static_cast<float>(b.launched_ms));
  mine.push_back(static_cast<float>(ddp.timing().backward_ms));
  mine.push_back(static_cast<float>(ddp.timing().wait_ms));
  const std::size_t K = mine.size();
  auto all = gather(world, mine);
  std::printf("ms since this rank's backward began, when each bucket's all-reduce started:\n%-12s", "");
  for (int r = 0; r < N; ++r) std::printf("   rank %d", r);
  std::printf("\n");
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    std::printf("bucket %-5zu", i);
    for (int r = 0; r < N; ++r) std::printf(" %8.2f", all[r * K + i]);
    std::printf("\n");
  }
  std::printf("%-12s", "backward end");
  for (int r = 0; r < N; ++r) std::printf(" %8.2f", all[r * K + K - 2]);
  std::printf("\n%-12s", "wait in step");
  for (int r = 0; r < N; ++r) std::printf(" %8.2f", all[r * K + K - 1]);
  std::printf("\n");
  // The same all-reduces with nothing to hide under: how long the communication takes on its own.
  std::vector<Tensor> bufs;
  for (const auto& b : buckets) bufs.push_back(Tensor::zeros({b.numel()}));
  world.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 3; ++rep)
    for (Tensor& t : bufs) world.all_reduce(t, dist::ReduceOp::avg);
  const double alone = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 3;
  const double waited = all[K - 1];
  std::printf("rank 0: the all-reduces alone take %.2f ms; step() waited %.2f ms -> %.0f%% hidden under backward\n",
              alone, waited, 100.0 * std::max(0.0, 1.0 - waited / alone));
  std::printf("(%d ranks share this machine's cores: timings are noisy, the order is not)\n", N);
  // One more step, recorded (after the timings: a recorder costs time): what every rank holds after its
  // backward and after the all-reduce, as frames (docs/frames.md, lessons/common/frames.h).
  events::Recorder rec;
  const std::int64_t before_framed = world.stats().bytes;
  {
    events::Attach on(rec);
    s.engine->train_batch(s.train_sampler);
  }
  const std::int64_t framed_bytes = world.stats().bytes - before_framed;
  const lesson::StepFrames frames(rec.events(), world, *s.engine, lesson::frames_in_colour(beats));
  std::printf("\none more step, recorded: what each rank holds of the flat space (its %zu buckets end to end)\n"
              "after its backward, then after the all-reduce. DDP shards nothing: every rank holds all of it.\n",
              buckets.size());
  frames.print_legend();
  frames.print(frames.find("backward", "backward"));
  const std::size_t reduced = frames.find("all-reduce the gradients");
  frames.print(reduced);
  std::printf("\nafter backward each rank's gradients are its own (~: from its own micro-batch, different on each\n"
              "rank); after the all-reduce every rank holds the same averages (*). The frame's all_reduce: %lld bytes\n"
              "per rank = world.stats() over this step, %lld bytes: beat 7 sets them beside 2(N-1)/N * psi * 4.\n",
              static_cast<long long>(frames.bytes(reduced)), static_cast<long long>(framed_bytes));
}

void bytes_per_step(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("bytes per step: 2(N-1)/N * psi * 4",
             "Per optimizer step DDP all-reduces every gradient once: the ring's 2(N-1)/N of the buckets'\n"
             "buffers, Ψ floats (plus padding to a multiple of N). world.stats() *recorded* that volume as\n"
             "each all-reduce started (MPI's own all-reduce ran). To *measure* it, the same buffers go\n"
             "through the watched ring of beats 2-4, every message counted as it is sent.");
  const int N = world.size(), rank = world.rank();
  const auto& buckets = s.engine->strategy_as<zero::Stage0>()->ddp()->buckets();
  const std::int64_t psi = s.model->num_parameters();
  std::int64_t flat = 0;  // Σ bucket buffers, elements: Ψ + padding
  std::vector<Tensor> copies;
  for (const auto& b : buckets) {
    flat += b.buffer.numel();
    copies.push_back(b.buffer.flat().clone());  // (numel) this rank's averaged gradients, a copy
  }
  const std::int64_t before_ring = world.stats().bytes;
  const dist::ring::Shift counted = lesson05::counted_shift(world, nullptr);
  for (Tensor& t : copies) dist::ring::all_reduce(t.data<float>(), t.numel(), rank, N, counted);
  const auto measured = gather(world, {static_cast<float>(world.stats().bytes - before_ring)});
  const std::int64_t formula = 2 * (N - 1) * flat * 4 / N;
  std::printf("buckets' buffers: %lld elements = psi %lld + padding %lld\n", static_cast<long long>(flat),
              static_cast<long long>(psi), static_cast<long long>(flat - psi));
  std::printf("recorded by world.stats() in that step: %lld bytes in %lld all-reduces\n",
              static_cast<long long>(s.step_bytes), static_cast<long long>(s.step_calls));
  const bool same_everywhere = std::all_of(measured.begin(), measured.end(), [&](float m) { return m == measured[0]; });
  std::printf("measured %lld bytes per rank%s (%zu ring all-reduces, every isend counted)\n",
              static_cast<long long>(measured[0]), same_everywhere ? "" : " on rank 0 (ranks DIFFER)", copies.size());
  const bool equal = static_cast<std::int64_t>(measured[0]) == formula && s.step_bytes == formula;
  std::printf("formula 2*(%d-1)/%d * %lld * 4 = %lld bytes  %s\n", N, N, static_cast<long long>(flat),
              static_cast<long long>(formula), equal ? "(equal: measured = recorded = formula)" : "(DIFFERENT)");
  std::printf("with gradient accumulation G, the first G-1 micro-steps send nothing (no_sync).\n");
}

void train_the_baby_gpt_on_n_ranks(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt, State& s) {
  beats.beat("train the baby GPT on N ranks",
             "Lesson 03's run (AdamW, warmup-decay LR, clip 1.0, seed 1337), batch 8 per rank.\n"
             "The loss printed is the mean over ranks (a scalar all-reduce, not gradient traffic).");
  s.model = make_model(s.cfg, s.V, s.cfg.training.seed);
  s.engine = runtime::initialize(s.model, s.cfg, &world);
  const auto t0 = std::chrono::steady_clock::now();
  while (s.engine->global_steps() < opt.steps) {
    s.ddp_losses.push_back(s.engine->train_batch(s.train_sampler));
    const std::int64_t step = s.engine->global_steps();
    if (step % 20 == 0 || step == 1 || step == opt.steps) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("step %4lld  loss %.4f  lr %.2e  %5.0f ms/step\n", static_cast<long long>(step), s.ddp_losses.back(),
                  static_cast<double>(s.engine->lr()), 1e3 * secs / static_cast<double>(step));
      std::fflush(stdout);
    }
  }
  const float ddp_train = s.engine->evaluate(s.train_eval, s.eval_iters);
  s.ddp_val = s.engine->evaluate(s.val_eval, s.eval_iters);
  std::printf("%d ranks: train loss %.4f, val loss %.4f\n", world.size(), ddp_train, s.ddp_val);
}

void the_same_run_on_one_rank(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt, State& s) {
  beats.beat("the same run on one rank",
             "One rank with batch 8N drawn as N micro-batches of 8 (gradient accumulation) trains on\n"
             "exactly the micro-batches the N ranks drew. DDP must give its losses, up to float\n"
             "summation order. (Lesson 03 draws its 32 as one micro-batch: other windows, same curve.)");
  if (world.rank() != 0) return;
  const int N = world.size();
  const long long steps = opt.steps;
  runtime::Config one = runtime::Config::from_json(ddp_config(steps, 8, N, opt.bucket), 1, "lesson-05 (1 rank)");
  if (!std::getenv("MINITORCH_NUM_THREADS"))  // the others sleep meanwhile: take every core
    set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  auto ref = runtime::initialize(make_model(one, s.V, one.training.seed), one);
  double worst = 0;
  std::printf("step    %d ranks    1 rank   rel. diff\n", N);
  for (long long step = 1; step <= steps; ++step) {
    const float l = ref->train_batch(s.train_sampler), d = s.ddp_losses[static_cast<std::size_t>(step - 1)];
    const double rel = std::abs(d - l) / std::abs(l);
    worst = std::max(worst, rel);
    if (step % 20 == 0 || step == 1 || step == steps)
      std::printf("%4lld   %8.4f  %8.4f   %.1e\n", step, static_cast<double>(d), static_cast<double>(l), rel);
  }
  const float one_train = ref->evaluate(s.train_eval, s.eval_iters), one_val = ref->evaluate(s.val_eval, s.eval_iters);
  std::printf("1 rank:  train loss %.4f, val loss %.4f\n", one_train, one_val);
  std::printf("largest relative loss difference over %lld steps: %.1e\n", steps, worst);
  std::printf("final after %lld steps: %d ranks val %.4f vs 1 rank val %.4f (lesson 03, 200 steps: ~2.22)\n", steps, N,
              static_cast<double>(s.ddp_val), static_cast<double>(one_val));
  std::fflush(stdout);
}

// The lesson's nine beats on every rank (rank 0 prints); main() below parses the options and runs it.
int run(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt) {
  const lesson::RanksLesson lesson05{
      .number = "05",
      .ranks_do = "each rank is one process with the whole model, and DDP\naverages the gradients between them",
      .data = opt.data,
      .note = "With one rank there is nobody to talk to: DDP would be the single-rank engine of lesson 03."};
  return lesson::run_on_ranks(world, lesson05, [&] {
    State s(opt, world.size(), beats.quick());
    n_ranks_one_model_each(beats, world, s);
    // Beats 2-4: how an all-reduce moves the bytes, step by step on a small tensor (watched_ring.cpp).
    lesson05::ring_beats(beats, world);
    buckets_gradients_in_reverse_order_of_use(beats, opt, s);
    one_step_buckets_fire_during_backward(beats, world, s);
    bytes_per_step(beats, world, s);
    train_the_baby_gpt_on_n_ranks(beats, world, opt, s);
    the_same_run_on_one_rank(beats, world, opt, s);
  });
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_ranks(argc, argv, "Lesson 05: data parallelism (DDP)", 9, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of each training run", /*quick=*/10);
    beats.option("--bucket", opt.bucket, "DDP's reduce_bucket_size, in elements");
  }, [&](lesson::Beats& beats, dist::ProcessGroup& world) { return run(beats, world, opt); });
}
