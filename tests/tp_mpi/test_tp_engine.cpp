// L13 — the engine on the grid: tensor parallelism alone (t = world), with data parallelism (DDP, ZeRO-1 and
// ZeRO-2 across the data ranks), with a pipeline, and the 2 × 2 × 2 grid at 8 ranks, each against one rank
// accumulating the same micro-batches: every step's loss, and the parameters gathered back whole.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "minitorch/events.h"
#include "pipeline/make_trainer.h"
#include "runtime/plan.h"
#include "runtime/report.h"
#include "tp/gpt.h"
#include "tp/state.h"
#include "zero_mpi/zero_test_util.h"

using namespace minitorch;

namespace {

// A baby GPT of 4 heads (t = 2 or 4 split it), 4 blocks (2 stages), clipped so the global norm matters.
std::string grid_json(int tensor, int stages, int zero_stage, int micro_batch, int accumulation,
                      const std::string& extra = "") {
  return R"({)" + extra + R"("train_micro_batch_size_per_gpu": )" + std::to_string(micro_batch) +
         R"(, "gradient_accumulation_steps": )" + std::to_string(accumulation) + R"(, "gradient_clipping": 0.5,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-3, "warmup_num_steps": 5}},
    "zero_optimization": {"stage": )" + std::to_string(zero_stage) + R"(, "reduce_bucket_size": 2500},
    "tensor_parallel": {"autotp_size": )" + std::to_string(tensor) + R"(},
    "pipeline": {"stages": )" + std::to_string(stages) + R"(},
    "model": {"name": "baby", "n_layer": 4, "n_head": 4, "n_embd": 32, "block_size": 16},
    "training": {"steps": 6, "seed": 11}})";
}

/// The trainer the tools build for `json` on the world (pipeline::make_trainer), on the verse corpus.
struct GridRun {
  runtime::Config cfg;
  runtime::Plan plan;
  data::TextDataset ds;
  std::unique_ptr<runtime::Trainer> trainer;
  std::unique_ptr<data::BatchSampler> sampler;
  GridRun(const std::string& json, dist::ProcessGroup& world)
      : cfg(runtime::Config::from_json(json, world.size())),
        plan(runtime::make_plan(cfg)),
        ds(data::TextDataset::from_text(mt_test::verse_corpus(), data::make_tokenizer("char", mt_test::verse_corpus()),
                                        cfg.model.block_size)) {
    Generator gen(cfg.training.seed);
    std::shared_ptr<nn::GPT> model;
    {
      TagScope scope(MemTag::param);
      model = std::make_shared<nn::GPT>(runtime::model_config(cfg, ds.tokenizer().vocab_size()), gen);
    }
    trainer = pipeline::make_trainer(model, cfg, plan, world);
    sampler = std::make_unique<data::BatchSampler>(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu,
                                                   cfg.model.block_size, cfg.training.seed);
  }
};

/// 6 steps of `json` on the world against one rank with the same global batch (micro × accumulation × data):
/// the losses within 1e-4 relative; without a pipeline also every parameter, the slices gathered back whole.
void expect_like_one_rank(const std::string& json, const std::string& what) {
  GridRun run(json, dist::world());
  const runtime::Config& c = run.cfg;
  zero_test::ZeroRun ref(grid_json(1, 1, 0, static_cast<int>(c.train_micro_batch_size_per_gpu),
                                   static_cast<int>(c.gradient_accumulation_steps) * c.data_parallel_size));
  ASSERT_EQ(c.train_batch_size, ref.cfg.train_batch_size) << what;
  for (int s = 0; s < 6; ++s) {
    const float a = run.trainer->train_batch(*run.sampler), b = ref.engine->train_batch(*ref.sampler);
    EXPECT_LT(std::abs(a - b) / std::abs(b), 1e-4) << what << ", step " << s << ": grid " << a << " vs 1 rank " << b;
  }
  const runtime::Engine& engine = run.trainer->engine();
  EXPECT_NEAR(engine.last_grad_norm(), ref.engine->last_grad_norm(), 1e-4 * ref.engine->last_grad_norm())
      << what << ": the global norm counts each parameter once";
  if (run.plan.pipelined()) return;  // the other stages' slices are released on this rank
  const auto* split = dynamic_cast<const tp::TensorParallelGPT*>(&engine.model());
  ASSERT_NE(split, nullptr) << what;
  const nn::NamedTensors whole = tp::full_state_dict(*split);
  std::map<std::string, Tensor> got(whole.begin(), whole.end());
  for (const auto& [name, p] : ref.engine->model().named_parameters()) {
    ASSERT_TRUE(got.count(name)) << what << ": " << name;
    EXPECT_LT(zero_test::rel_norm(got.at(name).to_vector(), p.to_vector()), 1e-4) << what << ": " << name;
  }
}

}  // namespace

TEST(L13_TensorParallelEngine, EveryRankATensorRankTrainsLikeOneRank) {
  const int t = dist::world().size();  // 2 or 4: both divide the 4 heads
  expect_like_one_rank(grid_json(t, 1, 0, 4, 2), "t = " + std::to_string(t));
}

TEST(L13_TensorParallelEngine, DataTimesTensorWithDdpAndZeroTrainsLikeOneRank) {
  if (dist::world().size() != 4) GTEST_SKIP() << "2 data × 2 tensor ranks need 4 ranks";
  for (int stage : {0, 1, 2})
    expect_like_one_rank(grid_json(2, 1, stage, 4, 2), "2 data x 2 tensor, ZeRO stage " + std::to_string(stage));
}

TEST(L13_TensorParallelEngine, PipelineTimesTensorTrainsLikeOneRank) {
  if (dist::world().size() != 4) GTEST_SKIP() << "2 stages × 2 tensor ranks need 4 ranks";
  expect_like_one_rank(grid_json(2, 2, 0, 4, 4), "2 stages x 2 tensor");
}

// The report's tensor_parallel entry: this rank's parameters and its tensor group's all-reduces of a step equal
// tp/memory.h's formulas to the element and the byte (with activation checkpointing: the recompute's g's too; in
// bf16: the forward's activations in 2 bytes), and the data-parallel counts leave them out.
TEST(L13_TensorParallelEngine, ReportCountsTheTensorGroupsTrafficLikeTheFormula) {
  const int t = dist::world().size();
  for (const std::string& extra : {std::string(), std::string(R"("activation_checkpointing": {"enabled": true, "segment_size": 2}, )"),
                                  std::string(R"("bf16": {"enabled": true}, )")}) {
    SCOPED_TRACE(extra.empty() ? "plain" : extra);
    GridRun run(grid_json(t, 1, 0, 2, 3, extra), dist::world());
    runtime::RunReport report(run.trainer->engine(), &dist::world());
    {
      events::Attach listen(report);
      for (int s = 0; s < 2; ++s) run.trainer->train_batch(*run.sampler);
    }
    const nlohmann::ordered_json r = report.rank_json()["tensor_parallel"];
    ASSERT_TRUE(r.is_object()) << report.rank_json().dump(1);
    EXPECT_EQ(r["size"], t);
    EXPECT_EQ(r["parameters"], r["formula"]["parameters"]);
    const auto& measured = r["all_reduce_last_step"];
    const auto& formula = r["formula"]["all_reduce_per_step"];
    EXPECT_GT(measured["calls"].get<std::int64_t>(), 0);
    for (const char* key : {"calls", "elements", "bytes"}) EXPECT_EQ(measured[key], formula[key]) << key << ": " << r.dump(1);
    // one rank of data: no gradient all-reduce, and the tensor group's are not counted among the others
    EXPECT_EQ(report.rank_json()["comm_last_step"]["all_reduce"]["calls"], 0);
  }
}

// Registered at 8 ranks only (tests/CMakeLists.txt): 2 data × 2 pipeline × 2 tensor, micro 4 × accumulation 2 on
// each data rank = the 16 samples of one rank's micro 4 × accumulation 4.
TEST(L13_Grid3D, TwoByTwoByTwoTrainsLikeOneRank) {
  if (dist::world().size() != 8) GTEST_SKIP() << "the 2 x 2 x 2 grid needs 8 ranks";
  expect_like_one_rank(grid_json(2, 2, 1, 4, 2), "2 data x 2 pipeline x 2 tensor, ZeRO-1");
}
