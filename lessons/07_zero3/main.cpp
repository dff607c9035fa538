// Lesson 07: ZeRO-3. mpirun -np 4 build/bin/lesson-07 [--auto] [--quick] [--beat N] [--data TEXT]
// [--steps N] [--prefetch ELEMENTS] (make lesson-07 starts it on 4 ranks)
// ZeRO-3 shards the parameters too: a rank holds a whole parameter only while its unit (a block, or
// the embeddings + ln_f) computes. The lesson shows who holds which shard, watches one forward and one
// backward gather, prefetch, reduce-scatter and release each unit (unit_trace.cpp, and as frames: what
// every rank holds at a unit's all-gather, release and reduce-scatter), counts the bytes
// of a step against 3(N-1)/N·Ψ, prints the paper's 7.5B table, maps the stages onto PyTorch FSDP, and
// trains the baby GPT at stage 3 beside lesson 05's DDP run.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/beat.h"
#include "common/frames.h"
#include "common/ranks.h"
#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "nn/phase_events.h"
#include "later_beats.h"
#include "unit_trace.h"
#include "runtime/config.h"
#include "runtime/engine.h"
#include "runtime/estimate.h"
#include "runtime/formulas.h"
#include "zero/stage3.h"

using namespace minitorch;
using lesson07::gather;

namespace {
struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 200, prefetch = 200000;
};

// configs/zero3.json's ZeRO settings on lesson 05's run (batch 32 = micro 8 × 4 ranks, AdamW,
// warmup-decay, clip 1.0, seed 1337): `stage` 3 here, 0 for lesson 05's DDP run beside it.
runtime::Config lesson_config(int stage, const Options& opt, int N) {
  const long long warmup = std::max(1LL, opt.steps / 12);
  const std::string json = R"({
    "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 2e-3,
                  "warmup_num_steps": )" + std::to_string(warmup) + R"(, "total_num_steps": )" +
                           std::to_string(opt.steps) + R"(, "warmup_type": "linear"}},
    "zero_optimization": {"stage": )" + std::to_string(stage) + R"(, "reduce_bucket_size": 200000,
      "stage3_param_persistence_threshold": 0, "stage3_prefetch_bucket_size": )" + std::to_string(opt.prefetch) + R"(},
    "model": {"name": "baby"},
    "training": {"steps": )" + std::to_string(opt.steps) + R"(, "eval_iters": 20, "seed": 1337, "tokenizer": "char"}
  })";
  return runtime::Config::from_json(json, N, "lesson-07 (configs/zero3.json)");
}

std::unique_ptr<runtime::Engine> make_engine(int stage, const Options& opt, dist::ProcessGroup& world, std::int64_t V) {
  const runtime::Config cfg = lesson_config(stage, opt, world.size());
  Generator init(cfg.training.seed);
  std::shared_ptr<nn::GPT> model;
  {
    TagScope scope(MemTag::param);
    model = std::make_shared<nn::GPT>(runtime::model_config(cfg, V), init);
  }
  return runtime::initialize(model, cfg, &world);
}

long long ll(double x) { return std::llround(x); }
}  // namespace

// What the beats hand on: the config, data and sampler, the stage-3 engine, its flat size (Ψ + padding),
// and from beat 2 to beat 3 the watchers of one step and its loss.
struct State {
  State(const Options& opt, int N, bool quick)
      : eval_iters(quick ? 2 : 20),
        cfg(lesson_config(3, opt, N)),
        ds(data::TextDataset::load(opt.data, cfg.training.tokenizer, cfg.model.block_size)),
        V(ds.tokenizer().vocab_size()),
        T(cfg.model.block_size),
        train_sampler(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu, T, cfg.training.seed) {}
  std::int64_t eval_iters;  // --quick: a noisier loss, the same comparison
  runtime::Config cfg;
  data::TextDataset ds;
  std::int64_t V, T;
  data::BatchSampler train_sampler;
  std::unique_ptr<runtime::Engine> engine;
  std::int64_t flat = 0;  // Ψ + padding
  std::optional<lesson07::UnitTrace> trace;
  events::Recorder framed;  // the same events again, for the frames (beat 2's and beat 3's)
  std::optional<lesson::Tee> trace_and_rec;
  data::Batch batch;  // beat 2's micro-batch, x, y: (8, 64) i32; alive to the end, as the frames' `other` bytes show
  Tensor loss;        // () the mean cross-entropy of beat 2's forward
};

void zero3_the_parameters_are_sharded_too(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt,
                                          State& s) {
  beats.beat("ZeRO-3: the parameters are sharded too",
             "ZeRO-1 sharded the optimizer states, ZeRO-2 the gradients; ZeRO-3 shards the parameters as\n"
             "well. Each unit (a block, or the embeddings + ln_f) is one flat buffer cut into N shards, and\n"
             "rank r keeps shard r of its parameters, gradients and Adam m, v: (P+G+K)Ψ/N bytes, 16Ψ/N in fp32.");
  const int N = world.size();
  s.engine = make_engine(3, opt, world, s.V);
  const auto* s3 = s.engine->strategy_as<zero::Stage3>();
  const zero::Partition& part = s3->partition();
  const std::int64_t psi = part.numel();
  s.flat = psi + part.padding();
  for (int step = 0; step < 2; ++step) s.engine->train_batch(s.train_sampler);  // Adam's m, v exist from the 1st update on
  const zero::ModelStateBytes m = s.engine->measured_model_states();  // the allocator's tags at the step
  const auto all = gather(world, {double(m.param), double(m.grad), double(m.optim)});
  std::printf("psi = %lld parameters in %zu units, padding %lld; fp32: P = 4, G = 4, K = 8 (Adam m, v)\n",
              ll(psi), s3->units().size(), ll(part.padding()));
  lesson07::print_owners(*s3, s.engine->model(), s.cfg);
  // Each rank's bytes as its allocator counted them, beside what zero::Partition plans for that rank.
  const std::vector<double> planned = lesson07::planned_totals(s.engine->model(), s.cfg, N);
  std::printf("rank   param B    grad B   optim B   total B   planned B (exact_model_states)\n");
  bool as_planned = true, as_formula = true;
  const runtime::BytesPerParameter fp32 = runtime::bytes_per_parameter(false);
  const double formula = runtime::model_state_bytes(3, double(psi), N, fp32).total();  // 16Ψ/N
  for (int r = 0; r < N; ++r) {
    const double total = all[3 * r] + all[3 * r + 1] + all[3 * r + 2];
    std::printf("%4d %9lld %9lld %9lld %9lld %11lld\n", r, ll(all[3 * r]), ll(all[3 * r + 1]), ll(all[3 * r + 2]),
                ll(total), ll(planned[static_cast<std::size_t>(r)]));
    as_planned = as_planned && ll(total) == ll(planned[static_cast<std::size_t>(r)]);
    as_formula = as_formula && std::abs(total - formula) < 0.5;
  }
  for (int stage = 0; stage <= 3; ++stage)
    std::printf("stage %d: %-14s = %9.0f B per rank\n", stage, runtime::model_states_text(stage).c_str(),
                runtime::model_state_bytes(stage, double(psi), N, fp32).total());
  if (as_formula)
    std::printf("measured %lld B on every rank = formula 16*%lld/%d = %.0f B (equal)\n", ll(all[0] + all[1] + all[2]),
                ll(psi), N, formula);
  else  // N does not divide a unit: its buffer is padded; every rank's p and g shards carry the padding's share
    std::printf("measured %s the plan on every rank; formula 16*%lld/%d = %.0f B, but the p and g shards hold\n"
                "(psi + padding)/N = %lld elements each, Adam's m and v only the real ones\n",
                as_planned ? "=" : "DIFFERS FROM", ll(psi), N, formula, ll(s.flat / N));
}

void units_gathered_to_compute_released_after(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("units: gathered to compute, released after",
             "Hooks on each unit's module drive a state machine: sharded -> gathering (all-gather started)\n"
             "-> gathered (waited) -> sharded again (released: the full buffer is freed). While a unit\n"
             "computes, the next one is prefetched (stage3_prefetch_bucket_size elements ahead).");
  const int N = world.size();
  const auto* s3 = s.engine->strategy_as<zero::Stage3>();
  const zero::Partition& part = s3->partition();
  for (const zero::Unit& unit : s3->units()) {
    const nn::NamedTensors params = unit.parameters();
    std::printf("unit %-5s %2zu tensors, %6lld elements, shard %6lld: %s ... %s\n", unit.name().c_str(), params.size(),
                ll(unit.numel()), ll(unit.numel() / N), params.front().first.c_str(), params.back().first.c_str());
  }
  runtime::Config deepspeed = s.cfg;
  deepspeed.zero.stage3_param_persistence_threshold = 100000;  // DeepSpeed's default
  const zero::UnitPlan ds_plan = zero::plan_units(
      runtime::meta_parameters(nn::GPT::parameter_shapes(s.engine->model().config())), s.engine->model().blocks.size(), deepspeed.strategy());
  std::printf("persistent buckets (tensors <= stage3_param_persistence_threshold = %lld elements, kept whole): %zu\n"
              "with DeepSpeed's default threshold 100000: %zu units, %zu persistent buckets (nothing sharded)\n\n",
              ll(double(s.cfg.zero.stage3_param_persistence_threshold)), part.buckets().size() - s3->units().size(),
              ds_plan.units.size(), ds_plan.buckets.size() - ds_plan.units.size());
  s.batch = s.train_sampler.sample(world.rank(), s.engine->global_steps(), N);  // x, y: (8, 64) i32
  const std::int64_t shards = memory_stats().current(MemTag::param);
  lesson07::UnitTrace& trace = s.trace.emplace(*s3);
  trace.print_header();
  reset_peak_memory();
  s.trace_and_rec.emplace(trace, s.framed);
  {
    events::Attach watching(*s.trace_and_rec);
    s.loss = s.engine->forward(s.batch.x, s.batch.y);  // () the mean cross-entropy
  }
  trace.flush();
  const auto peaks = gather(world, {double(memory_stats().peak(MemTag::param))});
  const double peak = *std::max_element(peaks.begin(), peaks.end());
  // The peak in units: the outer unit (4·numel bytes) and how many blocks were whole at once.
  const double outer = 4.0 * double(s3->units().front().numel());
  const long long blocks = ll((peak - double(shards) - outer) / (4.0 * double(s3->units().back().numel())));
  std::printf("param pool: shards %lld B; peak during forward %lld B (max over ranks) = shards + outer + %lld block%s\n",
              ll(shards), ll(peak), blocks, blocks == 1 ? "" : "s");
  const std::int64_t psi = part.numel();
  std::printf("the whole model, as DDP and ZeRO-1/2 hold it on every rank: 4 psi = %lld B (peak %s)\n", ll(4.0 * psi),
              peak < 4.0 * psi ? "is below it" : "is NOT below it");
  {
    const lesson::StepFrames frames(s.framed.events(), world, *s.engine, lesson::frames_in_colour(beats));
    std::printf("\nthe same forward as frames (docs/frames.md): block h.0 gathered on every rank, then released\n");
    frames.print_legend();
    const std::size_t gathered = frames.find("all-gather h.0", "forward");
    frames.print(gathered);
    frames.print(frames.find("release h.0", "forward", gathered));
    std::printf("\nall-gather: each rank sent its shard of h.0 and now holds the whole block (+; the outer unit too,\n"
                "its forward runs around the blocks'); release: the gathered buffer is freed, each rank keeps only\n"
                "its own shard (#), and h.1's prefetch is in flight (:).\n");
  }
}

void backward_gather_again_reduce_scatter_release(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("backward: gather again, reduce-scatter, release",
             "Backward needs the parameters again: each unit is gathered once more (the head's outer unit\n"
             "first), and when all its gradients are final they are reduce-scattered (rank r keeps the\n"
             "average of shard r) and the unit is released. The step then updates the shards only.");
  {
    nn::ModulePhaseEvents phases(s.engine->model());  // "backward transformer.h.K" events
    s.trace->print_header();
    events::Attach watching(*s.trace_and_rec);
    s.engine->backward(s.loss);
    s.engine->step();
  }
  s.trace->flush();
  std::printf("after the step: param pool %lld B = the shards again; nothing is gathered until the next forward\n",
              ll(memory_stats().current(MemTag::param)));
  {
    const lesson::StepFrames frames(s.framed.events(), world, *s.engine, lesson::frames_in_colour(beats));
    std::printf("\nthe same backward as frames: h.2's reduce-scatter done\n");
    frames.print_legend();
    frames.print(frames.find("reduce-scatter h.2"));
    std::printf("\nreduce-scatter: of h.2's gradients (and of h.3's, reduced before) each rank keeps its own shard,\n"
                "now the average over the ranks (*); the full local gradients were freed (.). The frame is taken\n"
                "when the reduction is done: backward has gone on meanwhile, the units it works on gathered (+),\n"
                "with local gradients (~) or a reduction in flight (%%: the shard, reducing).\n");
  }
}

void bytes_per_step(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("bytes per step: 3(N-1)/N * psi",
             "Every parameter is all-gathered twice (forward, backward) and its gradient reduce-scattered\n"
             "once: 3 ring passes of (N-1)/N·Ψ. ZeRO-1/2 (and DDP) need 2: ZeRO-3 trades 1.5x the traffic\n"
             "for parameters that take 1/N of the memory. Counted from the events of one train_batch.");
  const int N = world.size();
  std::map<std::string, std::array<std::int64_t, 3>> sent;  // op -> calls, elements, bytes this rank sent
  {
    events::Recorder rec;
    events::Attach listening(rec);
    s.engine->train_batch(s.train_sampler);
    for (const events::Event& e : rec.events())
      if (e.category == events::Category::comm && e.kind == events::Kind::begin) {
        auto& c = sent[e.name];
        c[0] += 1, c[1] += e.elements, c[2] += e.bytes;
      }
  }
  std::int64_t moved = 0;
  for (const std::string op : {"all_gather", "reduce_scatter", "all_reduce"}) {
    const auto& c = sent[op];
    std::printf("%-15s %3lld calls %8lld elements %9lld B\n", op.c_str(), ll(c[0]), ll(c[1]), ll(c[2]));
    if (op != "all_reduce") moved += c[1];
  }
  const double f3 = runtime::comm_elements_per_step(3, double(s.flat), N, 1), f2 = runtime::comm_elements_per_step(2, double(s.flat), N, 1);
  std::printf("gathers + reduce-scatters: measured %lld elements; formula 3*(%d-1)/%d * %lld = %lld elements %s\n",
              ll(moved), N, N, ll(s.flat), ll(f3), ll(moved) == ll(f3) ? "(equal)" : "(DIFFERENT)");
  std::printf("ZeRO-1/2: 2*(%d-1)/%d * %lld = %lld elements = %lld B; ZeRO-3: %lld B (x%.2f)\n", N, N, ll(s.flat), ll(f2),
              ll(4 * f2), ll(4 * f3), f3 / f2);
  std::printf("(the all_reduce is the global gradient norm for clipping: one float, in every stage)\n");
}

void train_the_baby_gpt_at_stage_3_beside_ddp(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt,
                                              State& s) {
  beats.beat("train the baby GPT at stage 3, beside lesson 05's DDP",
             "The same run as lesson 05 (seed 1337, batch 8 per rank, AdamW, warmup-decay, clip 1.0), at\n"
             "stage 3 and at stage 0 (DDP). The same micro-batches and the same averaged gradients: the\n"
             "losses must agree to float summation order.");
  lesson07::train_beat(world, opt.steps, s.eval_iters, s.ds, [&](int stage) { return make_engine(stage, opt, world, s.V); });
}

int run(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt) {
  const lesson::RanksLesson lesson07{.number = "07", .ranks_do = "ZeRO-3 shards the model over them", .data = opt.data};
  return lesson::run_on_ranks(world, lesson07, [&] {
    const int N = world.size();
    State s(opt, N, beats.quick());
    zero3_the_parameters_are_sharded_too(beats, world, opt, s);
    units_gathered_to_compute_released_after(beats, world, s);
    backward_gather_again_reduce_scatter_release(beats, world, s);
    bytes_per_step(beats, world, s);
    // Beats 5-6: the paper's 7.5B table from the estimator, and PyTorch FSDP's sharding strategies.
    lesson07::table_beats(beats, double(s.flat), N);
    train_the_baby_gpt_at_stage_3_beside_ddp(beats, world, opt, s);
  });
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_ranks(argc, argv, "Lesson 07: ZeRO-3 (parameters sharded too)", 7, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of each training run", /*quick=*/10);
    beats.option("--prefetch", opt.prefetch, "stage3_prefetch_bucket_size, in elements (1: no prefetch)");
  }, [&](lesson::Beats& beats, dist::ProcessGroup& world) { return run(beats, world, opt); });
}
