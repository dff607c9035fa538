// Lesson 05: data parallelism. mpirun -np 4 build/bin/lesson-05 [--auto] [--quick] [--beat N] [--data TEXT]
// [--steps N] [--bucket ELEMENTS] (make lesson-05 starts it on 4 ranks)
// Every rank holds the whole baby GPT and trains on its own micro-batches; DDP averages the gradients
// in buckets whose all-reduces start from the gradient hooks while backward is still running. The
// lesson runs the ring all-reduce step by step (watched_ring.cpp), shows the buckets, when each fired
// on each rank, what every rank holds after backward and after the all-reduce (the step's frames,
// common/frames.h), the bytes each rank sent against 2(N-1)/N·Ψ·4, and trains on N ranks against the
// one-rank run with the same global batch.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/beat.h"
#include "common/frames.h"
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

/// Waits for `req` sleeping, not spinning, and with no deadline: the ranks that wait leave the cores to
/// the one working, or wait for as long as the student reads.
void quiet_wait(MPI_Request& req) {
  for (int done = 0; MPI_Test(&req, &done, MPI_STATUS_IGNORE), !done;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}
void quiet_barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  quiet_wait(req);
}
/// Rank 0's `value` on every rank: what the student typed at a prompt (only rank 0 reads the terminal).
int from_rank0(int value) {
  MPI_Request req;
  MPI_Ibcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  quiet_wait(req);
  return value;
}

struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 200, bucket = 200000;
};
}  // namespace

// The lesson's nine beats on every rank (rank 0 prints); main() below parses the options and runs it.
int run(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt) {
  const int N = world.size(), rank = world.rank();
  const std::string& data_path = opt.data;
  const long long steps = opt.steps, bucket = opt.bucket;
  if (N == 1) {
    std::printf("This lesson runs on several ranks: each rank is one process with the whole model, and\n"
                "DDP averages the gradients between them. Start it with `make lesson-05` (4 ranks), or\n\n"
                "  mpirun -np 4 build/bin/lesson-05          (as root: add --allow-run-as-root;\n"
                "                                             fewer cores than ranks: add --oversubscribe)\n\n"
                "With one rank there is nobody to talk to: DDP would be the single-rank engine of lesson 03.\n");
    return 0;
  }
  if (!std::filesystem::exists(data_path))  // every rank sees it: rank 0 says it, all stop
    throw lesson::UsageError("data file '" + data_path +
                             "' not found. Make it with `make data`, or pass --data FILE (any UTF-8 text)");
  // --quick: 2 evaluation batches instead of 20 (a noisier loss, the same comparison)
  const std::int64_t eval_iters = beats.quick() ? 2 : 20;
  runtime::Config cfg = runtime::Config::from_json(ddp_config(steps, 8, 1, bucket), N, "lesson-05 (configs/ddp.json)");
  auto ds = data::TextDataset::load(data_path, cfg.training.tokenizer, cfg.model.block_size);
  const std::int64_t V = ds.tokenizer().vocab_size(), T = cfg.model.block_size, B = cfg.train_micro_batch_size_per_gpu;
  data::BatchSampler train_sampler(ds.tokens_ptr(data::Split::train), B, T, cfg.training.seed);

  // ------------------------------------------------------------------------------------------
  beats.beat("N ranks, one model each",
             "mpirun started N processes. Each builds the baby GPT (here from a different seed on purpose);\n"
             "the engine broadcasts rank 0's weights, so all start identical. Each rank then trains on its\n"
             "own micro-batches: global micro-batch number (step*G + micro)*N + rank.");
  // Different seeds per rank: only the broadcast makes them equal.
  auto model = make_model(cfg, V, cfg.training.seed + 1000 * static_cast<std::uint64_t>(rank));
  const double before = model->named_parameters().front().second.to_vector()[0];
  auto engine = runtime::initialize(model, cfg, &world);
  auto firsts = gather(world, {static_cast<float>(before), model->named_parameters().front().second.to_vector()[0]});
  std::printf("%d ranks x %d thread(s); batch %lld = micro %lld x accumulation %lld x %d ranks\n", N, num_threads(),
              static_cast<long long>(cfg.train_batch_size), static_cast<long long>(B),
              static_cast<long long>(cfg.gradient_accumulation_steps), N);
  for (int r = 0; r < N; ++r)
    std::printf("rank %d: wte[0,0] from its own seed %+.6f -> after broadcast %+.6f\n", r, firsts[2 * r], firsts[2 * r + 1]);

  // Beats 2-4: how an all-reduce moves the bytes, step by step on a small tensor (watched_ring.cpp).
  lesson05::ring_beats(beats, world);

  // ------------------------------------------------------------------------------------------
  beats.beat("buckets: gradients in reverse order of use",
             "Backward finishes the last layer's gradients first. DDP walks named_parameters() backwards\n"
             "and packs them into buckets of reduce_bucket_size elements (a bigger tensor gets its own);\n"
             "each bucket is one flat f32 buffer, tagged 'comm', and one all-reduce.");
  const dist::DistributedDataParallel& ddp = *engine->strategy_as<zero::Stage0>()->ddp();
  const auto& buckets = ddp.buckets();
  const std::int64_t psi = model->num_parameters();
  std::printf("psi = %lld parameters, reduce_bucket_size = %lld elements -> %zu buckets\n",
              static_cast<long long>(psi), bucket, buckets.size());
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const auto& b = buckets[i];
    std::printf("bucket %zu: %7lld elements, %2zu tensors: %s", i, static_cast<long long>(b.numel()), b.names.size(),
                b.names.front().c_str());
    if (b.names.size() > 1) std::printf(" ... %s", b.names.back().c_str());
    std::printf("\n");
  }
  std::printf("comm buffers: %.2f MB = 4 psi (memory_stats, tag comm)\n",
              static_cast<double>(memory_stats().current(MemTag::comm)) / 1e6);

  // ------------------------------------------------------------------------------------------
  beats.beat("one step: buckets fire during backward",
             "The hook of a bucket's last gradient copies the bucket into its buffer and starts a\n"
             "non-blocking all-reduce (average); backward keeps computing earlier layers meanwhile.\n"
             "step() then waits for what is still in flight: only that wait is exposed communication.");
  engine->train_batch(train_sampler);  // warm-up step (first-touch allocations)
  const dist::CommStats s0 = world.stats();
  engine->train_batch(train_sampler);
  const std::int64_t step_bytes = world.stats().bytes - s0.bytes, step_calls = world.stats().calls - s0.calls;
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
  auto t0 = std::chrono::steady_clock::now();
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
    engine->train_batch(train_sampler);
  }
  const std::int64_t framed_bytes = world.stats().bytes - before_framed;
  const lesson::StepFrames frames(rec.events(), world, *engine, lesson::frames_in_colour(beats));
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

  // ------------------------------------------------------------------------------------------
  beats.beat("bytes per step: 2(N-1)/N * psi * 4",
             "Per optimizer step DDP all-reduces every gradient once: the ring's 2(N-1)/N of the buckets'\n"
             "buffers, Ψ floats (plus padding to a multiple of N). world.stats() *recorded* that volume as\n"
             "each all-reduce started (MPI's own all-reduce ran). To *measure* it, the same buffers go\n"
             "through the watched ring of beats 2-4, every message counted as it is sent.");
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
  std::printf("recorded by world.stats() in that step: %lld bytes in %lld all-reduces\n", static_cast<long long>(step_bytes),
              static_cast<long long>(step_calls));
  const bool same_everywhere = std::all_of(measured.begin(), measured.end(), [&](float m) { return m == measured[0]; });
  std::printf("measured %lld bytes per rank%s (%zu ring all-reduces, every isend counted)\n",
              static_cast<long long>(measured[0]), same_everywhere ? "" : " on rank 0 (ranks DIFFER)", copies.size());
  const bool equal = static_cast<std::int64_t>(measured[0]) == formula && step_bytes == formula;
  std::printf("formula 2*(%d-1)/%d * %lld * 4 = %lld bytes  %s\n", N, N, static_cast<long long>(flat),
              static_cast<long long>(formula), equal ? "(equal: measured = recorded = formula)" : "(DIFFERENT)");
  std::printf("with gradient accumulation G, the first G-1 micro-steps send nothing (no_sync).\n");

  // ------------------------------------------------------------------------------------------
  beats.beat("train the baby GPT on N ranks",
             "Lesson 03's run (AdamW, warmup-decay LR, clip 1.0, seed 1337), batch 8 per rank.\n"
             "The loss printed is the mean over ranks (a scalar all-reduce, not gradient traffic).");
  model = make_model(cfg, V, cfg.training.seed);
  engine = runtime::initialize(model, cfg, &world);
  std::vector<float> ddp_losses;
  t0 = std::chrono::steady_clock::now();
  while (engine->global_steps() < steps) {
    ddp_losses.push_back(engine->train_batch(train_sampler));
    const std::int64_t s = engine->global_steps();
    if (s % 20 == 0 || s == 1 || s == steps) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("step %4lld  loss %.4f  lr %.2e  %5.0f ms/step\n", static_cast<long long>(s), ddp_losses.back(),
                  static_cast<double>(engine->lr()), 1e3 * secs / static_cast<double>(s));
      std::fflush(stdout);
    }
  }
  data::BatchSampler train_eval(ds.tokens_ptr(data::Split::train), 32, T, cfg.training.seed + 2);  // lesson 03's
  data::BatchSampler val_eval(ds.tokens_ptr(data::Split::val), 32, T, cfg.training.seed + 1);
  const float ddp_train = engine->evaluate(train_eval, eval_iters), ddp_val = engine->evaluate(val_eval, eval_iters);
  std::printf("%d ranks: train loss %.4f, val loss %.4f\n", N, ddp_train, ddp_val);

  // ------------------------------------------------------------------------------------------
  beats.beat("the same run on one rank",
             "One rank with batch 8N drawn as N micro-batches of 8 (gradient accumulation) trains on\n"
             "exactly the micro-batches the N ranks drew. DDP must give its losses, up to float\n"
             "summation order. (Lesson 03 draws its 32 as one micro-batch: other windows, same curve.)");
  if (rank == 0) {
    runtime::Config one = runtime::Config::from_json(ddp_config(steps, 8, N, bucket), 1, "lesson-05 (1 rank)");
    if (!std::getenv("MINITORCH_NUM_THREADS"))  // the others sleep meanwhile: take every core
      set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    auto ref = runtime::initialize(make_model(one, V, one.training.seed), one);
    double worst = 0;
    std::printf("step    %d ranks    1 rank   rel. diff\n", N);
    for (long long s = 1; s <= steps; ++s) {
      const float l = ref->train_batch(train_sampler), d = ddp_losses[static_cast<std::size_t>(s - 1)];
      const double rel = std::abs(d - l) / std::abs(l);
      worst = std::max(worst, rel);
      if (s % 20 == 0 || s == 1 || s == steps)
        std::printf("%4lld   %8.4f  %8.4f   %.1e\n", s, static_cast<double>(d), static_cast<double>(l), rel);
    }
    const float one_train = ref->evaluate(train_eval, eval_iters), one_val = ref->evaluate(val_eval, eval_iters);
    std::printf("1 rank:  train loss %.4f, val loss %.4f\n", one_train, one_val);
    std::printf("largest relative loss difference over %lld steps: %.1e\n", steps, worst);
    std::printf("final after %lld steps: %d ranks val %.4f vs 1 rank val %.4f (lesson 03, 200 steps: ~2.22)\n", steps, N,
                static_cast<double>(ddp_val), static_cast<double>(one_val));
    std::fflush(stdout);
  }
  quiet_barrier();
  std::printf("\nLesson 05 done.\n");
  return 0;
}

int main(int argc, char** argv) {
  dist::ProcessGroup& world = dist::init(&argc, &argv);
  if (world.rank() != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;  // rank 0 prints for everyone
  lesson::Beats beats("Lesson 05: data parallelism (DDP)", 9);
  Options opt;
  beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
  beats.option("--steps", opt.steps, "optimizer steps of each training run", /*quick=*/10);
  beats.option("--bucket", opt.bucket, "DDP's reduce_bucket_size, in elements");
  if (world.size() > 1) beats.on_ranks(world.rank(), from_rank0);  // rank 0 reads the prompt for all
  // An error on one rank must end the whole job, not leave the others waiting in a collective.
  return beats.run(argc, argv, [&] { return run(beats, world, opt); },
                   [](const std::string& what) { dist::abort_job(what, 1); });
}
