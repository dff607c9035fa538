// Lesson 06: ZeRO-1 and ZeRO-2. mpirun -np 4 build/bin/lesson-06 [--auto] [--quick] [--beat N] [--data TEXT]
// [--steps N] [--bucket ELEMENTS] (make lesson-06 starts it on 4 ranks)
// DDP keeps every model state on every rank: N copies of the same bytes. ZeRO-1 shards the optimizer
// states over the ranks (each rank updates its shard, then the parameters are all-gathered), ZeRO-2
// the gradients too (each bucket is reduce-scattered from the gradient hooks while backward runs and a
// rank keeps only its shard). The lesson shows the partition, one step's collectives with their bytes
// and what every rank holds after a bucket's reduce-scatter and at the end (frames), the model-state bytes of every rank beside the formula, the paper's 7.5B table, and trains the baby
// GPT at stages 0, 1 and 2 on the same batches: the same losses, for fewer bytes per rank.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/beat.h"
#include "common/frames.h"
#include "common/ranks.h"
#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "minitorch/events.h"
#include "nn/phase_events.h"
#include "shards.h"
#include "runtime/config.h"
#include "runtime/engine.h"
#include "runtime/estimate.h"
#include "zero/stage1.h"
#include "zero/stage2.h"

using namespace minitorch;

namespace {
// Lesson 05's run (configs/ddp.json: batch 32 = micro 8 x 4 ranks) at `stage`, with configs/zero2.json's
// overlap_comm at stage 2 (stage 1 reduces after backward, as configs/zero1.json does).
std::string zero_config(int stage, long long steps, long long bucket) {
  const long long warmup = std::max(1LL, steps / 12);
  return R"({
    "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 2e-3,
                  "warmup_num_steps": )" + std::to_string(warmup) + R"(, "total_num_steps": )" +
         std::to_string(steps) + R"(, "warmup_type": "linear"}},
    "zero_optimization": {"stage": )" + std::to_string(stage) + R"(, "reduce_bucket_size": )" + std::to_string(bucket) +
         (stage == 2 ? R"(, "overlap_comm": true)" : "") + R"(},
    "model": {"name": "baby"},
    "training": {"steps": )" + std::to_string(steps) + R"(, "eval_iters": 20, "seed": 1337, "tokenizer": "char"}
  })";
}

std::unique_ptr<runtime::Engine> make_engine(const runtime::Config& cfg, std::int64_t V, dist::ProcessGroup& world) {
  Generator init(cfg.training.seed);  // the same seed on every rank, as lesson 05's training run
  std::shared_ptr<nn::GPT> model;
  {
    TagScope scope(MemTag::param);
    model = std::make_shared<nn::GPT>(runtime::model_config(cfg, V), init);
  }
  return runtime::initialize(model, cfg, &world);
}

/// What the estimator predicts this rank holds at `stage`: the stages' own Partition, planned on the
/// model's parameter shapes alone (no storage), as `minitorch-estimate --config` does.
zero::ModelStateBytes planned(int stage, const runtime::Config& cfg, std::int64_t V, const dist::ProcessGroup& world) {
  const auto shapes = nn::GPT::parameter_shapes(runtime::model_shape(cfg, V));
  zero::Partition plan(runtime::meta_parameters(shapes), cfg.zero.reduce_bucket_size, world.rank(), world.size());
  return runtime::exact_model_states(stage, plan, runtime::bytes_per_parameter(false));
}

/// One optimizer step with an event recorder attached (and a backward span per module): what it saw.
std::vector<events::Event> recorded_step(runtime::Engine& engine, const data::BatchSampler& sampler) {
  events::Recorder rec;
  {
    events::Attach listen(rec);
    nn::ModulePhaseEvents phases(engine.model());  // "backward" begin / end per module
    engine.train_batch(sampler);
  }
  return rec.events();
}

struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 200, bucket = 200000;
};

std::vector<runtime::Config> stage_configs(const Options& opt, int N) {
  std::vector<runtime::Config> cfg;  // stages 0 (DDP), 1, 2
  for (int s = 0; s <= 2; ++s)
    cfg.push_back(runtime::Config::from_json(zero_config(s, opt.steps, opt.bucket), N,
                                          "lesson-06 (stage " + std::to_string(s) + ")"));
  return cfg;
}
}  // namespace

// What the beats hand on: the three stages' configs, the data and its sampler, the engine of the stage on
// show, and the sizes beats 3 and 4 print beside the formulas.
struct State {
  State(const Options& opt, int N, bool quick)
      : eval_iters(quick ? 2 : 20),
        cfg(stage_configs(opt, N)),
        ds(data::TextDataset::load(opt.data, cfg[0].training.tokenizer, cfg[0].model.block_size)),
        V(ds.tokenizer().vocab_size()),
        T(cfg[0].model.block_size),
        B(cfg[0].train_micro_batch_size_per_gpu),
        train_sampler(ds.tokens_ptr(data::Split::train), B, T, cfg[0].training.seed) {}
  std::int64_t eval_iters;            // lesson 05's: a noisier loss, the same comparison
  std::vector<runtime::Config> cfg;  // stages 0 (DDP), 1, 2
  data::TextDataset ds;
  std::int64_t V, T, B;
  data::BatchSampler train_sampler;
  const runtime::BytesPerParameter fp32 = runtime::bytes_per_parameter(/*bf16=*/false);  // P=4 G=4 K=8
  std::unique_ptr<runtime::Engine> engine;
  std::int64_t psi = 0;
  double flat_elements = 0;  // psi + the partition's padding
};

void ddps_model_states(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("DDP's model states: 16 psi bytes on every rank",
             "Per parameter a rank holds its value (P bytes), its gradient (G) and AdamW's state (K). We train in\n"
             "fp32: P=4, G=4, K=8 (m and v; the parameters are their own master copy). The paper's mixed\n"
             "precision has P=2, G=2, K=12 (fp32 master, m, v): 16 bytes per parameter either way, on every rank.");
  const int N = world.size();
  s.engine = make_engine(s.cfg[0], s.V, world);
  for (int step = 0; step < 2; ++step) s.engine->train_batch(s.train_sampler);  // AdamW allocates m, v at its first step
  s.psi = s.engine->model().num_parameters();
  lesson06::print_model_states(world, 0, s.engine->measured_model_states(), planned(0, s.cfg[0], s.V, world), s.psi,
                               s.fp32);
  std::printf("%d ranks hold %d copies of the same %.1f MB: ZeRO keeps one, cut in %d shards\n", N, N,
              static_cast<double>(s.engine->measured_model_states().total()) / 1e6, N);
}

void the_partition(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt, State& s) {
  beats.beat("the partition: buckets cut in N shards, rank r owns shard r",
             "ZeRO lays the parameters out in buckets (DDP's: reverse order of use, at most reduce_bucket_size\n"
             "elements), each one flat buffer padded to a multiple of N and cut in N equal shards. A shard cuts\n"
             "through parameters: the optimizer of rank r sees pieces <param>[a:b] (zero/partition.h).");
  const int N = world.size();
  s.engine = make_engine(s.cfg[1], s.V, world);  // ZeRO-1: the parameters now live in the buckets' buffers
  const auto* s1 = s.engine->strategy_as<zero::Stage1>();
  lesson06::print_partition(world, s1->partition());
  const auto shapes = nn::GPT::parameter_shapes(runtime::model_shape(s.cfg[1], s.V));
  const int other = N == 3 ? 4 : 3;
  const zero::Partition plan(runtime::meta_parameters(shapes), opt.bucket, 0, other);  // planned only: no storage
  std::printf("(on %d ranks the same buckets would need %lld elements of padding: LESSON_NP=%d shows it)\n", other,
              static_cast<long long>(plan.padding()), other);
}

void zero1_one_step_live(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("ZeRO-1: one step, live",
             "Backward fills every rank's full gradients. At the boundary each bucket is reduce-scattered:\n"
             "rank r gets the average of its shard only. Each rank runs AdamW on its pieces, then every bucket's\n"
             "parameters are all-gathered from their owners. (N-1)/N psi + (N-1)/N psi: DDP's bytes exactly.");
  const int N = world.size();
  const auto* s1 = s.engine->strategy_as<zero::Stage1>();
  s.engine->train_batch(s.train_sampler);  // warm-up: AdamW's first step allocates m, v for my pieces
  const std::vector<events::Event> seen = recorded_step(*s.engine, s.train_sampler);
  lesson06::print_backward_timeline(seen);
  std::printf("%d of %zu buckets started from a gradient hook while backward ran (overlap_comm off, as in\n"
              "configs/zero1.json: the reduce-scatters start once backward is done)\n\n",
              s1->reducer().launched_in_backward(), s1->partition().buckets().size());
  const std::int64_t flat = s.psi + s1->partition().padding();
  s.flat_elements = static_cast<double>(flat);
  lesson06::print_step_traffic(world, s1->partition(), seen, runtime::comm_elements_per_step(1, s.flat_elements, N, 1));
  std::printf("\n");
  lesson06::print_model_states(world, 1, s.engine->measured_model_states(), planned(1, s.cfg[1], s.V, world), s.psi,
                               s.fp32);
  // The same recorded step as frames (docs/frames.md): what every rank holds after a reduce-scatter, and at the end.
  std::printf("\nthe same step as frames: what each rank holds of the flat space, bucket by bucket\n");
  const lesson::StepFrames frames1(seen, world, *s.engine, lesson::frames_in_colour(beats));
  frames1.print_legend();
  const std::size_t reduced0 = frames1.find("reduce-scatter bucket 0");
  frames1.print(reduced0);
  frames1.print(frames1.find("all-gather the updated parameters"));
  std::printf("\nZeRO-1: every rank keeps all its local gradients (~) after the reduce-scatter; only its own shard\n"
              "is the average (*). AdamW updates the shards it owns, and the all-gather makes every rank whole.\n");
  // The comm line of the reduce-scatter frame: bucket 1's reduction, started after bucket 0's, is in flight.
  const std::int64_t next = s1->partition().buckets()[1].numel;
  std::printf("comm at bucket 0's frame: %lld B = bucket 1's %lld elements x 4 B, %s: bucket 1's reduce-scatter is\n"
              "in flight, reading an f32 copy of the bucket. ZeRO-1 reduces in place (the shard it writes is a view\n"
              "into the gradients it reads), and a reduce-scatter must not write what it is still reading.\n",
              frames1.memory(reduced0, 0, "comm"), static_cast<long long>(next),
              frames1.memory(reduced0, 0, "comm") == 4 * next ? "equal" : "DIFFERENT");
}

void zero2_gradients_sharded_too(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("ZeRO-2: gradients sharded too, reduce-scattered during backward",
             "A rank keeps only its shard of the reduced gradient. The hook of each bucket's last gradient\n"
             "copies the bucket into a comm buffer, frees the gradients and starts its reduce-scatter, while\n"
             "backward goes on with the earlier layers (overlap_comm, configs/zero2.json): last layer first.");
  const int N = world.size();
  s.engine = make_engine(s.cfg[2], s.V, world);
  const auto* s2 = s.engine->strategy_as<zero::Stage2>();
  s.engine->train_batch(s.train_sampler);  // warm-up
  const std::vector<events::Event> seen = recorded_step(*s.engine, s.train_sampler);
  lesson06::print_backward_timeline(seen);
  const auto buckets = static_cast<int>(s2->partition().buckets().size());
  std::printf("%d of %d buckets started from a gradient hook while backward ran\n",
              s2->reducer().launched_in_backward(), buckets);
  int full = 0;  // parameters still holding a whole gradient after the step
  for (const auto& [name, p] : s.engine->model().named_parameters()) full += p.grad().defined();
  std::printf("parameters holding a full .grad after the step: %d of %zu\n\n", full,
              s.engine->model().named_parameters().size());
  lesson06::print_step_traffic(world, s2->partition(), seen, runtime::comm_elements_per_step(2, s.flat_elements, N, 1));
  std::printf("\n");
  lesson06::print_model_states(world, 2, s.engine->measured_model_states(), planned(2, s.cfg[2], s.V, world), s.psi,
                               s.fp32);
  std::printf("\nthe same step as frames: after bucket 1's reduce-scatter, inside backward, and at the end\n");
  const lesson::StepFrames frames2(seen, world, *s.engine, lesson::frames_in_colour(beats));
  frames2.print_legend();
  frames2.print(frames2.find("reduce-scatter bucket 1"));
  frames2.print(frames2.find("all-gather the updated parameters"));
  std::printf("\nZeRO-2: of buckets 0 and 1 each rank keeps only its own shard, reduced (*): their local gradients\n"
              "were freed (.) when each bucket's reduce-scatter began. The later buckets show how far backward\n"
              "got meanwhile: local gradients (~), or freed with the shard reducing (%%: its reduce-scatter in flight).\n"
              "After the step only the reduced shards are left: G psi / N bytes of gradients per rank.\n");
}

void the_papers_table_1(lesson::Beats& beats) {
  beats.beat("7.5B parameters on 1 to 1024 ranks: the paper's Table 1",
             "The same formulas (runtime/formulas.h) for the paper's 7.5B model in mixed precision: DDP's 16 psi\n"
             "never shrinks; ZeRO-1 tends to 4 psi (P+G), ZeRO-2 to 2 psi (P), ZeRO-3 to nothing.\n"
             "build/bin/minitorch-estimate --table1 prints all three models; the lesson prints the 7.5B rows.");
  lesson06::print_table1_7_5b();
}

void train_the_baby_gpt_at_stages_0_1_and_2(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt,
                                            State& s) {
  beats.beat("train the baby GPT at stages 0, 1 and 2",
             "Lesson 05's run (N ranks x micro-batch 8, AdamW, warmup-decay, clip 1.0, seed 1337) three times:\n"
             "DDP, ZeRO-1, ZeRO-2, on the same micro-batches. Sharding changes who computes what, not the\n"
             "math: the losses agree up to float summation order.");
  const char* names[] = {"DDP", "ZeRO-1", "ZeRO-2"};
  std::vector<std::vector<float>> losses(3);
  std::vector<float> train(3), val(3);
  std::vector<std::int64_t> states(3);
  data::BatchSampler train_eval(s.ds.tokens_ptr(data::Split::train), 32, s.T, s.cfg[0].training.seed + 2);  // lesson 03's
  data::BatchSampler val_eval(s.ds.tokens_ptr(data::Split::val), 32, s.T, s.cfg[0].training.seed + 1);
  for (int stage = 0; stage <= 2; ++stage) {
    const auto k = static_cast<std::size_t>(stage);
    s.engine.reset();
    s.engine = make_engine(s.cfg[k], s.V, world);
    const auto t0 = std::chrono::steady_clock::now();
    while (s.engine->global_steps() < opt.steps) losses[k].push_back(s.engine->train_batch(s.train_sampler));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    train[k] = s.engine->evaluate(train_eval, s.eval_iters);
    val[k] = s.engine->evaluate(val_eval, s.eval_iters);
    states[k] = s.engine->measured_model_states().total();
    std::printf("%-6s %lld steps, %.0f ms/step\n", names[stage], opt.steps, ms / static_cast<double>(opt.steps));
    std::fflush(stdout);
  }
  std::printf("\nstep       DDP    ZeRO-1    ZeRO-2\n");
  double worst[3] = {0, 0, 0};  // largest relative difference from DDP
  for (long long i = 1; i <= opt.steps; ++i) {
    const auto k = static_cast<std::size_t>(i - 1);
    for (std::size_t stage = 1; stage <= 2; ++stage)
      worst[stage] = std::max(worst[stage], std::abs(static_cast<double>(losses[stage][k]) / losses[0][k] - 1));
    if (i % 20 == 0 || i == 1 || i == opt.steps)
      std::printf("%4lld  %8.4f  %8.4f  %8.4f\n", i, losses[0][k], losses[1][k], losses[2][k]);
  }
  for (std::size_t stage = 0; stage <= 2; ++stage)
    std::printf("%-6s train loss %.4f, val loss %.4f, model states %lld bytes per rank\n", names[stage], train[stage],
                val[stage], static_cast<long long>(states[stage]));
  std::printf("largest relative loss difference from DDP over %lld steps: ZeRO-1 %.1e, ZeRO-2 %.1e\n", opt.steps,
              worst[1], worst[2]);
  std::printf("(DDP here is lesson 05's run on %d ranks: the same config, seed and micro-batches, the same numbers)\n",
              world.size());
}

// The lesson's six beats on every rank (rank 0 prints); main() below parses the options and runs it.
int run(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt) {
  const lesson::RanksLesson lesson06{
      .number = "06",
      .ranks_do = "ZeRO shards the model states over them",
      .data = opt.data,
      .note = "On one rank there is nothing to shard: every stage is the single-rank engine of lesson 03."};
  return lesson::run_on_ranks(world, lesson06, [&] {
    State s(opt, world.size(), beats.quick());
    ddps_model_states(beats, world, s);
    the_partition(beats, world, opt, s);
    zero1_one_step_live(beats, world, s);
    zero2_gradients_sharded_too(beats, world, s);
    the_papers_table_1(beats);
    train_the_baby_gpt_at_stages_0_1_and_2(beats, world, opt, s);
  });
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_ranks(argc, argv, "Lesson 06: ZeRO-1 and ZeRO-2", 6, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of each training run", /*quick=*/10);
    beats.option("--bucket", opt.bucket, "reduce_bucket_size, in elements");
  }, [&](lesson::Beats& beats, dist::ProcessGroup& world) { return run(beats, world, opt); });
}
