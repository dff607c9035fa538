// The single-rank engine: determinism, gradient accumulation, checkpoint round trip and resume,
// bf16 memory layout, and a real training run on the King James Bible.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "autograd/node.h"
#include "data/text_dataset.h"
#include "runtime/checkpoint.h"
#include "runtime/engine.h"
#include "runtime/save_and_resume.h"
#include "train_util.h"

using namespace minitorch;
using mt_test::TrainRun;

namespace {
std::string config_json(int micro, int accum, int steps, const std::string& extra = "") {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro) +
         R"(, "gradient_accumulation_steps": )" + std::to_string(accum) +
         R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}},
    "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16},
    "training": {"steps": )" + std::to_string(steps) + R"(, "seed": 11})" + extra + "}";
}

}  // namespace

TEST(L03_Engine, SameSeedGivesBitIdenticalLossesOver20Steps) {
  TrainRun a(config_json(4, 1, 20)), b(config_json(4, 1, 20));
  auto la = a.train(20), lb = b.train(20);
  for (std::size_t i = 0; i < la.size(); ++i) EXPECT_EQ(la[i], lb[i]) << "step " << i;
  EXPECT_EQ(a.params(), b.params());
  EXPECT_LT(la.back(), la.front());
}

TEST(L03_Engine, GradientAccumulationMatchesOneBigBatch) {
  // 2 micro-batches of 2 sequences == 1 micro-batch of 4 with the same sequences, up to float
  // summation order.
  // Feed the big run the concatenation of the accumulation run's two micro-batches.
  TrainRun accum(config_json(2, 2, 5)), big(config_json(4, 1, 5));
  auto b0 = accum.sampler->sample(0, 0, 1, 0, 2), b1 = accum.sampler->sample(0, 0, 1, 1, 2);
  auto cat = [](const Tensor& a, const Tensor& b) {
    auto va = a.to_int_vector(), vb = b.to_int_vector();
    va.insert(va.end(), vb.begin(), vb.end());
    return Tensor::from_ints(va, {a.size(0) + b.size(0), a.size(1)});
  };
  accum.train(1);
  Tensor loss = big.engine->forward(cat(b0.x, b1.x), cat(b0.y, b1.y));
  big.engine->backward(loss);
  ASSERT_TRUE(big.engine->step());
  auto pa = accum.params(), pb = big.params();
  ASSERT_EQ(pa.size(), pb.size());
  double worst = 0;
  for (std::size_t i = 0; i < pa.size(); ++i) worst = std::max(worst, std::abs(double(pa[i]) - pb[i]));
  EXPECT_LT(worst, 1e-6);
  EXPECT_NEAR(accum.engine->last_grad_norm(), big.engine->last_grad_norm(), 1e-5 * big.engine->last_grad_norm());
}

TEST(L03_Engine, OnlyTheLastMicroBatchSteps) {
  TrainRun r(config_json(2, 3, 1));
  auto before = r.params();
  for (int m = 0; m < 3; ++m) {
    auto b = r.sampler->sample(0, 0, 1, m, 3);
    r.engine->backward(r.engine->forward(b.x, b.y));
    EXPECT_EQ(r.engine->step(), m == 2);
    if (m < 2) {
      EXPECT_EQ(r.params(), before);
    }
  }
  EXPECT_NE(r.params(), before);
  EXPECT_EQ(r.engine->global_steps(), 1);
}

TEST(L03_Checkpoint, RoundTripGivesBitIdenticalEvalLoss) {
  TrainRun r(config_json(4, 1, 3));
  r.train(3);
  auto path = (std::filesystem::temp_directory_path() / ("mt-ckpt-" + std::to_string(::getpid()) + ".safetensors")).string();
  runtime::save_checkpoint(path, *r.engine, r.ds.tokenizer(), "run-a");
  data::EvalWindows windows(r.ds.tokens_ptr(data::Split::val), 16);
  auto batch = windows.batch(0, windows.count());
  autograd::NoGradGuard no_grad;
  float before = r.engine->model().loss(batch.x, batch.y).item();
  runtime::CheckpointInfo info;
  auto loaded = runtime::load_model(path, &info);
  float after = loaded->loss(batch.x, batch.y).item();
  EXPECT_EQ(before, after);
  EXPECT_EQ(info.step, 3);
  EXPECT_EQ(info.tokenizer->to_string(), r.ds.tokenizer().to_string());
  EXPECT_TRUE(info.model == r.engine->model().config());
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".optim");
  std::filesystem::remove(runtime::manifest_path(path));
}

TEST(L03_Checkpoint, ResumeContinuesBitIdentically) {
  TrainRun straight(config_json(4, 1, 6));
  auto all = straight.train(6);

  TrainRun first(config_json(4, 1, 6));
  first.train(3);
  auto path = (std::filesystem::temp_directory_path() / ("mt-resume-" + std::to_string(::getpid()) + ".safetensors")).string();
  runtime::save_checkpoint(path, *first.engine, first.ds.tokenizer(), "run-a");
  TrainRun second(config_json(4, 1, 6));
  runtime::resume_from(path, *second.engine);
  EXPECT_EQ(second.engine->global_steps(), 3);
  auto rest = second.train(3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rest[i], all[3 + i]) << "step " << 3 + i;
  EXPECT_EQ(second.params(), straight.params());
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".optim");
  std::filesystem::remove(runtime::manifest_path(path));
}

TEST(L03_Engine, Bf16ModelStatesAre16BytesPerParameter) {
  // docs/design.md §3: bf16 params 2Ψ + bf16 grads 2Ψ + f32 master, m, v 12Ψ.
  auto before = memory_stats();
  TrainRun r(config_json(2, 1, 1, R"(, "bf16": {"enabled": true})"));
  const std::int64_t psi = r.engine->model().num_parameters();
  auto b = r.sampler->sample(0, 0);
  r.engine->backward(r.engine->forward(b.x, b.y));
  auto mid = memory_stats();
  EXPECT_EQ(mid.current(MemTag::param) - before.current(MemTag::param), 2 * psi);
  EXPECT_EQ(mid.current(MemTag::grad) - before.current(MemTag::grad), 2 * psi);
  r.engine->step();
  auto after = memory_stats();
  EXPECT_EQ(after.current(MemTag::optim) - before.current(MemTag::optim), 12 * psi);
  EXPECT_EQ(after.current(MemTag::grad) - before.current(MemTag::grad), 0) << "zero_grad frees the gradients";
  EXPECT_TRUE(std::isfinite(r.engine->last_grad_norm()));
}

TEST(L03_Engine, DivergedTrainingStopsNamingTheStep) {
  // lr 1e300 used to print nan losses to the end and exit 0.
  TrainRun run(R"({"train_micro_batch_size_per_gpu": 2,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e300}},
    "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16},
    "training": {"steps": 5, "seed": 3}})");
  std::string msg;
  try {
    run.train(5);
  } catch (const std::runtime_error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("step 2: the loss is "), std::string::npos) << msg;
  EXPECT_NE(msg.find("lower optimizer.params.lr or set gradient_clipping"), std::string::npos) << msg;
  EXPECT_EQ(run.engine->global_steps(), 1);
}

// zero_optimization.stage 1-3 on one rank: single-rank training (the shard is the whole model), with one
// warning that says so; stage 0 runs as asked, without one.
TEST(L06_Engine, AZeroStageOnOneRankRunsAsSingleRankTrainingWithOneWarning) {
  for (int stage : {0, 1, 2, 3}) {
    SCOPED_TRACE("zero_optimization.stage " + std::to_string(stage));
    TrainRun run(config_json(2, 1, 1, R"(, "zero_optimization": {"stage": )" + std::to_string(stage) + "}"));
    EXPECT_EQ(run.engine->strategy().zero_stage(), 0);
    EXPECT_EQ(run.engine->strategy().name(), "single rank");
    if (stage == 0) {
      EXPECT_TRUE(run.engine->warnings().empty());
      continue;
    }
    ASSERT_EQ(run.engine->warnings().size(), 1u);
    EXPECT_EQ(run.engine->warnings()[0].rfind("zero_optimization.stage " + std::to_string(stage) +
                                                  " on one data-parallel rank runs as single-rank training (stage 0)",
                                              0),
              0u)
        << run.engine->warnings()[0];
  }
}
