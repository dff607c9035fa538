// Lesson 09: pipeline parallelism. mpirun -np 4 build/bin/lesson-09 [--auto] [--quick] [--beat N] [--data TEXT]
// [--steps N] (make lesson-09 starts it on 4 ranks)
// The GPT's blocks split over the ranks, micro-batches flowing through them. Schedules are data (GPipe
// and 1F1B as instruction lists, printed as timelines); the bubble (P−1)/(M+P−1) on the clock and
// measured as M grows; what each stage keeps alive (GPipe all M micro-batches, 1F1B at most P − s),
// in micro-batches and in bytes; the point-to-point bytes and the tied embedding; a 2 × 2 data ×
// pipeline grid against one rank; and the baby GPT trained on the KJV on 4 ranks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/beat.h"
#include "common/ranks.h"
#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "pipeline/engine.h"
#include "pipeline/schedule.h"
#include "runtime/config.h"
#include "runtime/engine.h"

using namespace minitorch;

namespace {

// configs/pipeline.json's run, resized: `stages` stages of the baby GPT, micro-batches of `micro`,
// M = `micro_batches` per step; stages = 1 is one rank accumulating M (the reference).
std::string pipe_config(int stages, long long micro, long long micro_batches, const std::string& schedule,
                        long long steps) {
  const long long warmup = std::max(1LL, steps / 12);
  return R"({
    "train_micro_batch_size_per_gpu": )" + std::to_string(micro) + R"(, "gradient_accumulation_steps": )" +
         std::to_string(micro_batches) + R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 2e-3,
                  "warmup_num_steps": )" + std::to_string(warmup) + R"(, "total_num_steps": )" +
         std::to_string(steps) + R"(, "warmup_type": "linear"}},
    "pipeline": {"stages": )" + std::to_string(stages) + R"(, "schedule": ")" + schedule +
         R"(", "partition_method": "uniform"},
    "model": {"name": "baby"},
    "training": {"steps": )" + std::to_string(steps) + R"(, "seed": 1337, "tokenizer": "char"}
  })";
}

std::shared_ptr<nn::GPT> baby_gpt(const runtime::Config& cfg, std::int64_t V) {
  Generator init(cfg.training.seed);  // the same seed on every rank: every stage's layers are the whole model's
  TagScope scope(MemTag::param);
  return std::make_shared<nn::GPT>(runtime::model_config(cfg, V), init);
}

/// Every rank's `mine`, in rank order (bookkeeping: not in the traffic counts).
std::vector<float> gather(dist::ProcessGroup& world, const std::vector<float>& mine) {
  dist::NoRecordScope quiet(world);
  const auto k = static_cast<std::int64_t>(mine.size());
  return world.all_gather(Tensor::from_vector(mine, {k}), k * world.size()).to_vector();
}

double mib(double bytes) { return bytes / 1048576.0; }

struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 200;
};

// The pipeline of beats 1-4: P stages, one block each; M8 micro-batches per step (beats 1, 3 and 4).
constexpr int P = 4, M8 = 8;

}  // namespace

// What the beats hand on: the text, its vocabulary size and the training split's ids.
struct State {
  explicit State(const Options& opt)
      : ds(data::TextDataset::load(opt.data, "char", 64)),
        V(ds.tokenizer().vocab_size()),
        tokens(ds.tokens_ptr(data::Split::train)) {}
  data::TextDataset ds;
  std::int64_t V;
  std::shared_ptr<const std::vector<std::int32_t>> tokens;
};

void schedules_as_data(lesson::Beats& beats) {
  beats.beat("schedules as data",
             "A schedule is, for each stage, the list of instructions it runs in one step: load, forward,\n"
             "send / receive an activation, backward, send / receive a gradient, reduce_tied, step.\n"
             "pipeline::gpipe(P, M) and pipeline::one_f_one_b(P, M) build them; simulate() plays them on\n"
             "a clock (forward 1 unit, backward 2) and render() draws it.");
  const pipeline::Schedule g = pipeline::gpipe(P, M8), f = pipeline::one_f_one_b(P, M8);
  pipeline::check(g);
  pipeline::check(f);
  std::printf("1F1B, stage 1's first instructions:");
  for (std::size_t k = 0; k < 10; ++k) {
    const pipeline::Instruction& in = f[1][k];
    std::printf(" %s", pipeline::op_name(in.op));
    if (in.micro >= 0) std::printf("(%d)", in.micro);
  }
  std::printf(" ...\n");
  for (const auto& [name, s] : {std::pair<const char*, const pipeline::Schedule&>{"GPipe", g}, {"1F1B", f}}) {
    const pipeline::Timeline t = pipeline::simulate(s);
    std::printf("\n%s, P = %d stages, M = %d micro-batches:\n%s", name, P, M8, pipeline::render(t).c_str());
    std::printf("bubble on the clock %.4f = (P-1)/(M+P-1) = 3/11 = %.4f; micro-batches alive at most, per stage:",
                t.bubble, pipeline::bubble_formula(P, M8));
    for (const auto& st : t.stages) std::printf(" %d", st.peak_live);
    std::printf("\n");
  }
}

void the_bubble_as_m_grows(lesson::Beats& beats, dist::ProcessGroup& world, const State& s) {
  beats.beat("the bubble as M grows: the clock, then these 4 ranks",
             "Both schedules idle (P-1) forward+backward slots per stage: bubble = (P-1)/(M+P-1). More\n"
             "micro-batches hide it. Then the real thing: 4 stages of the baby GPT (one block each) on these\n"
             "ranks, the bubble measured as 1 - sum of busy time / (P x the step's pipeline phase).");
  const int N = world.size();
  std::printf("%4s %10s %14s %14s\n", "M", "formula", "GPipe clock", "1F1B clock");
  for (int M : {1, 2, 4, 8, 16})
    std::printf("%4d %10.4f %14.4f %14.4f\n", M, pipeline::bubble_formula(P, M),
                pipeline::simulate(pipeline::gpipe(P, M)).bubble, pipeline::simulate(pipeline::one_f_one_b(P, M)).bubble);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("\nmeasured (1F1B, micro-batches of 4 x 64 tokens, %lld steps after a warm-up; this machine: %u cores "
              "for %d ranks):\n%4s %10s %10s\n",
              beats.quick() ? 2LL : 4LL, cores, N, "M", "formula", "measured");
  for (long long M : beats.quick() ? std::vector<long long>{1, 4} : std::vector<long long>{1, 2, 4, 8, 16}) {
    const runtime::Config cfg = runtime::Config::from_json(pipe_config(P, 4, M, "1f1b", 100), N, "lesson-09");
    pipeline::PipelineEngine pipe(baby_gpt(cfg, s.V), cfg, world);
    data::BatchSampler sampler(s.tokens, 4, 64, 1337);
    for (long long step = 0; step <= (beats.quick() ? 2 : 4); ++step) pipe.train_batch(sampler);
    const pipeline::PipelineMeasure m = pipe.measure();
    std::printf("%4lld %10.4f %10.4f\n", M, m.bubble_formula, m.bubble_measured);
  }
  if (cores < static_cast<unsigned>(N))
    std::printf("fewer cores than stages: stages that could compute together take turns, so the measured bubble "
                "stays above the formula\n");
}

void what_a_stage_keeps_alive(lesson::Beats& beats, dist::ProcessGroup& world, const State& s) {
  beats.beat("what a stage keeps alive: GPipe's M against 1F1B's P - s",
             "A micro-batch's activations live from its forward to its backward. GPipe runs all M forwards\n"
             "first: every stage holds M. 1F1B starts a backward as soon as it can: stage s holds at most\n"
             "min(P - s, M). Measured: the most micro-batches alive, and the peak of the allocator's\n"
             "`activation` bytes in a step, on each stage, M = 8.");
  std::vector<std::vector<float>> peaks;
  nn::GPTConfig baby;
  for (const char* schedule : {"gpipe", "1f1b"}) {
    const runtime::Config cfg = runtime::Config::from_json(pipe_config(P, 4, M8, schedule, 100), world.size(), "lesson-09");
    baby = runtime::model_config(cfg, s.V);
    pipeline::PipelineEngine pipe(baby_gpt(cfg, s.V), cfg, world);
    data::BatchSampler sampler(s.tokens, 4, 64, 1337);
    pipe.train_batch(sampler);  // AdamW's states appear in the first step
    reset_peak_memory();
    const std::int64_t before = memory_stats().current(MemTag::activation);
    pipe.train_batch(sampler);
    const std::int64_t peak = memory_stats().peak(MemTag::activation) - before;
    const pipeline::PipelineMeasure m = pipe.measure();
    // bytes as KiB and remainder: exact in f32
    peaks.push_back(gather(world, {static_cast<float>(peak / 1024), static_cast<float>(peak % 1024),
                                   static_cast<float>(m.stages[world.rank()].peak_live)}));
  }
  auto bytes = [&](int schedule, int st) {
    return static_cast<std::int64_t>(peaks[schedule][3 * st]) * 1024 + static_cast<std::int64_t>(peaks[schedule][3 * st + 1]);
  };
  std::printf("%6s %22s %22s %10s\n", "stage", "GPipe: alive, peak", "1F1B: alive, peak", "ratio");
  for (int st = 0; st < P; ++st) {
    const double gb = static_cast<double>(bytes(0, st)), fb = static_cast<double>(bytes(1, st));
    std::printf("%6d %8.0f (= %d) %7.2f MiB %8.0f (= %d) %7.2f MiB %9.2fx\n", st, peaks[0][3 * st + 2], M8, mib(gb),
                peaks[1][3 * st + 2], std::min(P - st, M8), mib(fb), fb > 0 ? gb / fb : 0.0);
  }
  // A middle stage holds one block's saved activations per micro-batch alive (lesson 08's count), less
  // the block's input x: it arrived by recv_act into a `comm` buffer, so the allocator counts it there.
  const std::int64_t B = 4, T = 64, C = baby.n_embd, H = baby.n_head;
  const std::int64_t per_micro = 4 * (15 * B * T * C + B * H * T * T + 4 * B * T);
  const std::int64_t extra = bytes(0, 1) - bytes(1, 1);
  std::printf("stage 1, GPipe's peak - 1F1B's = %lld bytes for 8 - 3 = 5 more micro-batches alive;\n"
              "formula 5 x 4·(15·BTC + B·H·T² + 4·BT) = 5 x %lld = %lld bytes  %s\n",
              static_cast<long long>(extra), static_cast<long long>(per_micro), static_cast<long long>(5 * per_micro),
              extra == 5 * per_micro ? "(= measured)" : "(DIFFERENT)");
}

void point_to_point_bytes_and_the_tied_embedding(lesson::Beats& beats, dist::ProcessGroup& world, const State& s) {
  beats.beat("point-to-point bytes and the tied embedding",
             "Between stages only one tensor per micro-batch travels each way: the activation (B, T, C)\n"
             "forward, its gradient backward. The token embedding is also the LM head: stage 0 owns it, the\n"
             "last stage sends its gradient there after the last backward and gets the updated weight back.");
  const std::int64_t V = s.V;
  const runtime::Config cfg = runtime::Config::from_json(pipe_config(P, 4, M8, "1f1b", 100), world.size(), "lesson-09");
  auto model = baby_gpt(cfg, V);
  pipeline::PipelineEngine pipe(model, cfg, world);
  data::BatchSampler sampler(s.tokens, 4, 64, 1337);
  for (int step = 0; step < 3; ++step) pipe.train_batch(sampler);
  const pipeline::PipelineMeasure m = pipe.measure();
  const std::int64_t C = model->config().n_embd, btc = 4 * 64 * C, act = btc * 4;  // f32: 4 bytes an element
  std::printf("activations: measured %lld bytes per step = (P-1) x M x B·T·C x 4 = 3 x 8 x %lld x 4 = %lld  %s\n",
              static_cast<long long>(m.activation_bytes), static_cast<long long>(btc),
              static_cast<long long>(3 * M8 * act), m.activation_bytes == 3 * M8 * act ? "(= formula)" : "(DIFFERENT)");
  std::printf("gradients:   measured %lld bytes per step, the same  %s\n", static_cast<long long>(m.gradient_bytes),
              m.gradient_bytes == 3 * M8 * act ? "(= formula)" : "(DIFFERENT)");
  std::printf("tied weight: measured %lld bytes per step = 2 x V·C x 4 = 2 x %lld x 4 = %lld  %s\n",
              static_cast<long long>(m.tied_bytes), static_cast<long long>(V * C), static_cast<long long>(8 * V * C),
              m.tied_bytes == 8 * V * C ? "(= formula)" : "(DIFFERENT)");
  // The last stage's copy of the tied weight against stage 0's, after 3 steps.
  Tensor wte = model->wte->weight;
  float diff = 0;
  if (world.rank() == P - 1) world.send(wte, 0, 9);
  if (world.rank() == 0) {
    Tensor theirs = Tensor::empty(wte.shape());
    world.recv(theirs, P - 1, 9);
    const std::vector<float> a = wte.to_vector(), b = theirs.to_vector();
    for (std::size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
    std::printf("wte on stage 0 and stage 3 after 3 steps: max |difference| %g\n", static_cast<double>(diff));
  }
  std::printf("DeepSpeed all-reduces the two gradients and updates both copies: the same bytes; here the weight's "
              "AdamW state lives on stage 0 only\n");
}

void a_2x2_grid_data_parallel_x_pipeline(lesson::Beats& beats, dist::ProcessGroup& world, const State& s) {
  beats.beat("a 2 x 2 grid: data parallel x pipeline",
             "4 ranks as 2 stages x 2 replicas (dist/grid.h): consecutive ranks form a stage's data-parallel\n"
             "group (DDP between them), ranks {0, 2} and {1, 3} are the two pipelines. Each pipeline takes its\n"
             "own micro-batches; the step equals one rank accumulating all of them.");
  const int N = world.size();
  const long long steps = beats.quick() ? 5 : 20;
  const runtime::Config cfg = runtime::Config::from_json(pipe_config(2, 4, 4, "1f1b", steps), N, "lesson-09 (grid)");
  pipeline::PipelineEngine pipe(baby_gpt(cfg, s.V), cfg, world);
  const std::vector<float> where =
      gather(world, {static_cast<float>(pipe.stage()), static_cast<float>(pipe.grid().dp_rank)});
  for (int r = 0; r < N; ++r)
    std::printf("world rank %d: stage %.0f, data-parallel rank %.0f\n", r, where[2 * r], where[2 * r + 1]);
  data::BatchSampler sampler(s.tokens, 4, 64, 1337);
  std::vector<float> losses;
  for (long long step = 0; step < steps; ++step) losses.push_back(pipe.train_batch(sampler));
  if (world.rank() == 0) {  // the reference: one rank, 8 micro-batches per step (the others wait asleep)
    const runtime::Config one = runtime::Config::from_json(pipe_config(1, 4, 8, "1f1b", steps), 1, "lesson-09 (1 rank)");
    auto engine = runtime::initialize(baby_gpt(one, s.V), one);
    data::BatchSampler ref_sampler(s.tokens, 4, 64, 1337);
    double worst = 0;
    std::printf("%6s %14s %14s\n", "step", "2 x 2 grid", "1 rank");
    for (long long step = 0; step < steps; ++step) {
      const float ref = engine->train_batch(ref_sampler);
      worst = std::max(worst, std::abs(static_cast<double>(losses[step]) - ref) / ref);
      if (step == 0 || step == steps - 1 || (step + 1) % 5 == 0)
        std::printf("%6lld %14.6f %14.6f\n", step + 1, static_cast<double>(losses[step]), static_cast<double>(ref));
    }
    std::printf("largest relative difference over %lld steps: %.1e%s\n", steps, worst,
                worst == 0 ? " (bit for bit)" : " (float sums in another order)");
  }
  lesson::quiet_barrier();
}

void training_the_baby_gpt_on_the_kjv_on_4_ranks(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt,
                                                 const State& s) {
  beats.beat("training the baby GPT on the KJV on 4 ranks",
             "Lesson 05's run on the 2 x 2 grid: micro-batches of 8, M = 2 per pipeline, 2 pipelines. Step k\n"
             "takes the same 4 micro-batches of 8 windows as lesson 05's 4 DDP ranks (BatchSampler numbers them\n"
             "globally), so the curve is lesson 05's, to float summation order. Then train and val loss on\n"
             "lesson 05's evaluation batches. (configs/pipeline.json runs M = 4 micro-batches of 4 instead: a\n"
             "smaller bubble, other windows; mpirun -np 4 build/bin/minitorch-train --config configs/pipeline.json)");
  const int N = world.size();
  const runtime::Config cfg = runtime::Config::from_json(pipe_config(2, 8, 2, "1f1b", opt.steps), N, "lesson-09 (KJV)");
  pipeline::PipelineEngine pipe(baby_gpt(cfg, s.V), cfg, world);
  // lesson 05: DDP on the 4 ranks, micro-batches of 8, no accumulation
  const runtime::Config ddp = runtime::Config::from_json(pipe_config(1, 8, 1, "1f1b", opt.steps), N, "lesson-09 (DDP)");
  auto engine = runtime::initialize(baby_gpt(ddp, s.V), ddp, &world);
  data::BatchSampler train(s.tokens, 8, 64, cfg.training.seed), ddp_train(s.tokens, 8, 64, ddp.training.seed);
  double worst = 0;
  std::printf("%6s %12s %12s\n", "step", "pipeline", "DDP");
  for (long long step = 1; step <= opt.steps; ++step) {
    const float a = pipe.train_batch(train), b = engine->train_batch(ddp_train);
    worst = std::max(worst, std::abs(static_cast<double>(a) - b) / b);
    if (step == 1 || step % 20 == 0 || step == opt.steps)
      std::printf("%6lld %12.4f %12.4f\n", step, static_cast<double>(a), static_cast<double>(b));
  }
  std::printf("largest relative loss difference over %lld steps: %.1e\n", opt.steps, worst);
  // lesson 05's evaluation: 32 windows per batch, 20 batches (--quick: 2)
  const long long eval_iters = beats.quick() ? 2 : 20;
  data::BatchSampler train_eval(s.tokens, 32, 64, cfg.training.seed + 2),
      val_eval(s.ds.tokens_ptr(data::Split::val), 32, 64, cfg.training.seed + 1);
  const float t = pipe.evaluate(train_eval, eval_iters), v = pipe.evaluate(val_eval, eval_iters);
  const float dt = engine->evaluate(train_eval, eval_iters), dv = engine->evaluate(val_eval, eval_iters);
  std::printf("pipeline on 4 ranks: train loss %.4f, val loss %.4f\n", static_cast<double>(t), static_cast<double>(v));
  std::printf("DDP on 4 ranks (lesson 05): train loss %.4f, val loss %.4f\n", static_cast<double>(dt),
              static_cast<double>(dv));
  const pipeline::PipelineMeasure m = pipe.measure();
  std::printf("bubble measured %.3f, formula (P-1)/(M+P-1) = 1/3 = %.3f\n", m.bubble_measured, m.bubble_formula);
}

int run(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt) {
  const lesson::RanksLesson lesson09{
      .number = "09",
      .ranks_do = "a pipeline of 4 stages, then a 2 x 2 grid",
      .data = opt.data,
      .exact_ranks = 4,
      .note = "`build/bin/minitorch-pipeline --stages 4 --micro 8` prints the schedules on one rank."};
  return lesson::run_on_ranks(world, lesson09, [&] {
    const State s(opt);
    schedules_as_data(beats);
    the_bubble_as_m_grows(beats, world, s);
    what_a_stage_keeps_alive(beats, world, s);
    point_to_point_bytes_and_the_tied_embedding(beats, world, s);
    a_2x2_grid_data_parallel_x_pipeline(beats, world, s);
    training_the_baby_gpt_on_the_kjv_on_4_ranks(beats, world, opt, s);
  });
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_ranks(argc, argv, "Lesson 09: pipeline parallelism", 6, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of beat 6", /*quick=*/10);
  }, [&](lesson::Beats& beats, dist::ProcessGroup& world) { return run(beats, world, opt); });
}
