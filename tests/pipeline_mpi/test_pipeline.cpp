// L09 — the pipeline engine on 2 and 4 ranks: P stages (both schedules, both partition methods) and a
// 2 × 2 data × pipeline grid train like one rank accumulating the same micro-batches (losses and final
// parameters), and a step's live micro-batches and point-to-point bytes equal their formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "pipeline/engine.h"
#include "runtime/save_and_resume.h"
#include "runtime/sharded_checkpoint.h"
#include "zero_mpi/zero_test_util.h"

using namespace minitorch;

namespace {

// A baby GPT of 4 blocks (up to 4 stages), micro-batches of 2 sequences of 16 tokens.
std::string pipeline_json(int stages, const std::string& schedule, const std::string& method, int micro_batches,
                          int zero_stage = 0, bool clip = true) {
  return R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": )" + std::to_string(micro_batches) +
         (clip ? R"(, "gradient_clipping": 0.5)" : "") + R"(,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-3, "warmup_num_steps": 5}},
    "zero_optimization": {"stage": )" + std::to_string(zero_stage) + R"(, "reduce_bucket_size": 2500},
    "pipeline": {"stages": )" + std::to_string(stages) + R"(, "schedule": ")" + schedule +
         R"(", "partition_method": ")" + method + R"("},
    "model": {"name": "baby", "n_layer": 4, "n_head": 2, "n_embd": 24, "block_size": 16},
    "training": {"steps": 20, "seed": 11}})";
}

/// The pipeline run of `json` on the world: the same corpus and sampler as mt_test::TrainRun.
struct PipeRun {
  runtime::Config cfg;
  data::TextDataset ds;
  std::unique_ptr<pipeline::PipelineEngine> pipe;
  std::unique_ptr<data::BatchSampler> sampler;
  /// `init_seed`: the weights' seed (default: the config's).
  explicit PipeRun(const std::string& json, dist::ProcessGroup& world, std::uint64_t init_seed = 0)
      : cfg(runtime::Config::from_json(json, world.size())),
        ds(data::TextDataset::from_text(mt_test::verse_corpus(), data::make_tokenizer("char", mt_test::verse_corpus()),
                                        cfg.model.block_size)) {
    Generator gen(init_seed ? init_seed : cfg.training.seed);
    std::shared_ptr<nn::GPT> model;
    {
      TagScope scope(MemTag::param);
      model = std::make_shared<nn::GPT>(runtime::model_config(cfg, ds.tokenizer().vocab_size()), gen);
    }
    pipe = std::make_unique<pipeline::PipelineEngine>(model, cfg, world);
    sampler = std::make_unique<data::BatchSampler>(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu,
                                                   cfg.model.block_size, cfg.training.seed);
  }
  std::vector<float> train(int steps) {
    std::vector<float> losses;
    for (int s = 0; s < steps; ++s) losses.push_back(pipe->train_batch(*sampler));
    return losses;
  }
};

/// One rank accumulating over M × dp micro-batches: the same global batch, whole model.
std::string reference_json(const runtime::Config& c) {
  const int dp = c.data_parallel_size;
  return pipeline_json(1, "1f1b", "uniform", static_cast<int>(c.gradient_accumulation_steps) * dp, 0,
                       c.gradient_clipping > 0);
}

/// 20 steps of `json` against one rank: every step's loss, then every parameter this rank holds.
void expect_like_one_rank(const std::string& json, const std::string& what) {
  auto& world = dist::world();
  PipeRun run(json, world);
  zero_test::ZeroRun ref(reference_json(run.cfg), nullptr, 11);
  ASSERT_EQ(run.cfg.train_batch_size, ref.cfg.train_batch_size) << what;
  for (int s = 0; s < 20; ++s) {
    const float a = run.pipe->train_batch(*run.sampler), b = ref.engine->train_batch(*ref.sampler);
    EXPECT_LT(std::abs(a - b) / std::abs(b), 2e-5) << what << ", step " << s << ": pipeline " << a << " vs 1 rank " << b;
  }
  std::map<std::string, Tensor> want;
  for (auto& [name, p] : ref.engine->model().named_parameters()) want[name] = p;
  for (auto& [name, p] : run.pipe->held_parameters()) {
    const std::vector<float> got = p.to_vector(), ref_values = want.at(name).to_vector();
    EXPECT_LT(zero_test::rel_norm(got, ref_values), 2e-4) << what << ": " << name << " on stage " << run.pipe->stage();
  }
}

}  // namespace

TEST(L09_PipelineEngine, StagesTrainLikeOneRank) {
  const int P = dist::world().size();
  for (const char* schedule : {"gpipe", "1f1b"})
    for (const char* method : {"uniform", "parameters"})
      expect_like_one_rank(pipeline_json(P, schedule, method, 4),
                           std::to_string(P) + " stages, " + schedule + ", " + method);
}

TEST(L09_PipelineEngine, DataTimesPipelineGridTrainsLikeOneRank) {
  if (dist::world().size() != 4) GTEST_SKIP() << "the 2 x 2 grid needs 4 ranks";
  expect_like_one_rank(pipeline_json(2, "1f1b", "parameters", 4), "2 x 2 grid, DDP per stage");
  expect_like_one_rank(pipeline_json(2, "gpipe", "uniform", 4, /*zero_stage=*/1), "2 x 2 grid, ZeRO-1 per stage");
}

namespace {

/// 2 steps of `schedule` on P = world stages, M = 8: the second step's live micro-batches per stage, the
/// activation, gradient and tied bytes against their formulas and against the process group's count.
void expect_live_and_bytes_like_the_formulas(const std::string& schedule) {
  auto& world = dist::world();
  const int P = world.size(), M = 8;
  {
    PipeRun run(pipeline_json(P, schedule, "uniform", M), world);
    dist::ProcessGroup& pipe = *run.pipe->grid().pipe;
    std::int64_t sent_elements = 0;
    for (int step = 0; step < 2; ++step) {
      const std::size_t first = pipe.stats().log.size();
      run.pipe->train_batch(*run.sampler);
      sent_elements = 0;
      for (std::size_t i = first; i < pipe.stats().log.size(); ++i)
        if (pipe.stats().log[i].op == "send") sent_elements += pipe.stats().log[i].elements;
    }
    const pipeline::PipelineMeasure m = run.pipe->measure();
    for (int s = 0; s < P; ++s)  // GPipe stashes all M, 1F1B at most P - s
      EXPECT_EQ(m.stages[s].peak_live, schedule == "gpipe" ? M : std::min(P - s, M)) << schedule << ", stage " << s;
    const nn::GPTConfig& g = run.pipe->engine().model().config();
    const std::int64_t act = 2 * 16 * g.n_embd * 4;  // one micro-batch's (B, T, C) f32 activation
    EXPECT_EQ(m.activation_bytes, static_cast<std::int64_t>(P - 1) * M * act) << schedule;
    EXPECT_EQ(m.gradient_bytes, static_cast<std::int64_t>(P - 1) * M * act) << schedule;
    EXPECT_EQ(m.tied_bytes, 2 * g.vocab_size * g.n_embd * 4) << schedule << ": the head's gradient there, the weight back";
    // This rank's sends, counted by the process group's byte accounting.
    const int s = run.pipe->stage();
    const std::int64_t mine = (s < P - 1 ? M * act : 0) + (s > 0 ? M * act : 0) +
                              ((s == 0 || s == P - 1) ? g.vocab_size * g.n_embd * 4 : 0);
    EXPECT_EQ(sent_elements * 4, mine) << schedule << ", stage " << s;
    EXPECT_EQ(m.steps_measured, 1);
    EXPECT_NEAR(m.bubble_formula, (P - 1.0) / (M + P - 1.0), 1e-12);
    for (const pipeline::StageMeasure& st : m.stages) {
      EXPECT_GT(st.busy_ms, 0);
      EXPECT_GE(st.idle_ms, 0);
    }
    EXPECT_GE(m.bubble_measured, 0);
    EXPECT_LT(m.bubble_measured, 1);
  }
}

}  // namespace

TEST(L09_PipelineEngine, OneFOneBsLiveMicroBatchesAndBytesEqualTheFormulas) {
  expect_live_and_bytes_like_the_formulas("1f1b");
}

// ---- L09.3 (lab task: the executor's point-to-point: recv_act, send_act, recv_grad, send_grad) ----

// A count on the receiving side too, or a send counted twice, shows here.
TEST(L09_T3_PointToPoint, BytesSentEqualTheFormulas) { expect_live_and_bytes_like_the_formulas("gpipe"); }

// The gradient must cross every stage boundary: a received activation that does not require a gradient,
// or the wrong tensor sent back, leaves the stages before it untrained (AdamW then moves their weights
// by weight decay only). After 3 steps every stage holds the one-rank model's values.
TEST(L09_T3_PointToPoint, GradientsCrossEveryStageBoundary) {
  auto& world = dist::world();
  PipeRun run(pipeline_json(world.size(), "gpipe", "uniform", 2, 0, /*clip=*/false), world);
  zero_test::ZeroRun ref(reference_json(run.cfg), nullptr, 11);
  for (int step = 0; step < 3; ++step) {  // the warm-up's first lr is 0
    const float a = run.pipe->train_batch(*run.sampler), b = ref.engine->train_batch(*ref.sampler);
    EXPECT_LT(std::abs(a - b) / std::abs(b), 2e-5) << "step " << step << ": pipeline " << a << " vs 1 rank " << b;
  }
  std::map<std::string, Tensor> want;
  for (auto& [name, p] : ref.engine->model().named_parameters()) want[name] = p;
  for (auto& [name, p] : run.pipe->held_parameters())
    EXPECT_LT(zero_test::rel_norm(p.to_vector(), want.at(name).to_vector()), 2e-5)
        << name << " on stage " << run.pipe->stage() << " of " << world.size();
  // What stage s received lives in `comm` buffers (the allocator's tag), not among the activations.
  if (run.pipe->stage() > 0) {
    EXPECT_GT(memory_stats().peak(MemTag::comm), 0);
  }
}

TEST(L09_PipelineEngine, EvaluationThroughTheStagesEqualsTheWholeModel) {
  auto& world = dist::world();
  PipeRun run(pipeline_json(world.size(), "1f1b", "parameters", 2), world);
  zero_test::ZeroRun ref(reference_json(run.cfg), nullptr, 11);
  data::BatchSampler val(run.ds.tokens_ptr(data::Split::val), 2, 16, 5);
  EXPECT_NEAR(run.pipe->evaluate(val, 3), ref.engine->evaluate(val, 3), 1e-5);
}

TEST(L09_PipelineEngine, OtherStagesParametersAreReleased) {
  auto& world = dist::world();
  PipeRun run(pipeline_json(world.size(), "1f1b", "uniform", 2), world);
  std::int64_t held = 0;
  for (auto& [name, p] : run.pipe->held_parameters()) held += p.numel();
  std::int64_t present = 0;
  for (auto& [name, p] : run.pipe->engine().model().named_parameters())
    if (!p.is_released()) present += p.numel();
  EXPECT_EQ(present, held);
  EXPECT_EQ(held, run.pipe->plan().parameters) << "the plan's count (the tied weight on both ends)";
}

// ---- checkpoints: one shard per rank of the grid, read back whole ----

TEST(L09_PipelineCheckpoint, ResumeOnTheSameGridIsBitIdentical) {
  auto& world = dist::world();
  zero_test::SharedDir dir;
  const int dp = world.size() / 2;
  for (int zero_stage : {0, 1}) {  // DDP or ZeRO-1 across each stage's replicas (ZeRO-1 on one replica is DDP)
    SCOPED_TRACE(zero_stage == 0 ? "zero_optimization.stage 0" : "zero_optimization.stage 1");
    const std::string json = pipeline_json(2, "1f1b", "parameters", 4, zero_stage);
    const std::string path = dir.path(zero_stage == 0 ? "p0" : "p1");
    PipeRun a(json, world);
    a.train(3);
    a.pipe->save(path, a.ds.tokenizer(), "run-a");
    const std::vector<float> uninterrupted = a.train(3);

    const runtime::ShardedManifest m = runtime::check_complete_sharded(path);
    EXPECT_EQ(m.pipeline_stages, 2);
    EXPECT_EQ(m.data_parallel_size, dp);
    EXPECT_EQ(m.shards.size(), static_cast<std::size_t>(world.size()));
    EXPECT_EQ(m.zero_stage, zero_stage == 1 && dp > 1 ? 1 : 0);
    EXPECT_EQ(m.params.size(), a.pipe->engine().model().named_parameters().size()) << "the whole model, every stage";

    PipeRun b(json, world, /*init_seed=*/99);  // another init: every weight must come from the save
    const runtime::ResumeInfo info = b.pipe->resume(path);
    EXPECT_EQ(info.step, 3);
    EXPECT_TRUE(info.warnings.empty());
    EXPECT_EQ(b.pipe->engine().global_steps(), 3);
    EXPECT_EQ(b.train(3), uninterrupted) << "losses must be equal to the bit (the last stage's tied copy included)";
  }
}

TEST(L09_PipelineCheckpoint, ResumesOnOneRankAndConsolidatesIntoTheModelItTrained) {
  auto& world = dist::world();
  zero_test::SharedDir dir;
  const std::string json = pipeline_json(2, "1f1b", "parameters", 2, /*zero_stage=*/1);
  const std::string path = dir.path("ckpt"), out = dir.path("model.safetensors");
  PipeRun a(json, world);
  a.train(3);
  a.pipe->save(path, a.ds.tokenizer(), "run-a");
  data::BatchSampler val(a.ds.tokens_ptr(data::Split::val), 2, 16, 5);
  const float in_memory = a.pipe->evaluate(val, 3);
  const std::vector<float> uninterrupted = a.train(3);

  // Another grid: one rank accumulating the grid's micro-batches (the same data per step), resumed on every rank.
  zero_test::ZeroRun one(reference_json(a.cfg), nullptr, 99);
  const runtime::ResumeInfo info = runtime::resume_from(path, *one.engine);
  EXPECT_EQ(info.step, 3);
  EXPECT_EQ(info.warnings.size(), world.size() == 2 ? 0u : 1u) << "a warning names the other data-parallel size";
  const std::vector<float> resumed = one.train(3);
  for (std::size_t s = 0; s < resumed.size(); ++s)
    EXPECT_LT(std::abs(resumed[s] - uninterrupted[s]) / uninterrupted[s], 2e-5) << "step " << s + 4;

  // minitorch-consolidate's function: one nanoGPT file (the tied weight once) that evaluates as the grid did.
  if (world.rank() == 0) {
    EXPECT_EQ(runtime::consolidate(path, out), a.pipe->engine().model().num_parameters());
  }
  world.barrier();
  zero_test::ZeroRun ref(reference_json(a.cfg), nullptr, 99);
  runtime::CheckpointInfo ci;
  std::shared_ptr<nn::GPT> consolidated = runtime::load_model(out, &ci);
  EXPECT_EQ(ci.step, 3);
  ref.engine->model().load_state_dict(consolidated->named_parameters(), /*strict=*/true);
  EXPECT_NEAR(ref.engine->evaluate(val, 3), in_memory, 1e-5);
}
