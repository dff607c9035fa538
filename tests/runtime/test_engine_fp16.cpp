// fp16 on one rank (runtime/loss_scaler.h): f16 training tracks f32; too large a loss scale overflows,
// the steps are skipped (nothing but the gradients changes, the schedule waits) and counted while
// the scale halves, and then the training goes on; the floor's error; a static scale; and the
// model states of fp16 are bf16's 2Ψ + 2Ψ + 12Ψ.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "optim/lr_schedule.h"
#include "train_util.h"
#include "runtime/engine.h"

using namespace minitorch;
using mt_test::TrainRun;

namespace {
std::string config_json(const std::string& fp16, int steps = 20) {
  return R"({"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 1e-4, "warmup_max_lr": 3e-3, "warmup_num_steps": 5}},
    "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16},
    "training": {"steps": )" + std::to_string(steps) + R"(, "seed": 11})" + (fp16.empty() ? "" : ", \"fp16\": " + fp16) + "}";
}
}  // namespace

TEST(L06_EngineFp16, TracksF32LossesOver20Steps) {
  TrainRun f32(config_json("")), f16(config_json(R"({"enabled": true})"));
  ASSERT_EQ(f16.engine->model().named_parameters()[0].second.dtype(), DType::f16);
  const auto a = f32.train(20), b = f16.train(20);
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_LT(std::abs(a[i] - b[i]) / a[i], 1e-2) << "step " << i << ": f32 " << a[i] << ", f16 " << b[i];
  EXPECT_LT(b.back(), b.front());
  EXPECT_EQ(f16.engine->skipped_steps(), 0) << "2^16 fits the baby GPT's gradients";
  EXPECT_EQ(f16.engine->loss_scale(), 65536.0);
  EXPECT_EQ(f16.engine->optimizer().step_count(), 20);
}

TEST(L06_EngineFp16, OverflowStepsAreSkippedCountedAndHalveTheScale) {
  // 2^40 × the gradients overflow f16 (max 65504): every step overflows until the scale fits.
  TrainRun run(config_json(R"({"enabled": true, "initial_scale_power": 40, "hysteresis": 1})"));
  const std::vector<float> initial = run.params();
  run.engine->train_batch(*run.sampler);
  EXPECT_TRUE(run.engine->last_step_skipped());
  EXPECT_FALSE(std::isfinite(run.engine->last_grad_norm())) << "the overflow's norm, not a divergence";
  EXPECT_EQ(run.engine->skipped_steps(), 1);
  EXPECT_EQ(run.engine->loss_scale(), std::ldexp(1.0, 39));
  EXPECT_EQ(run.engine->global_steps(), 1) << "DeepSpeed counts a skipped step in global_steps";
  EXPECT_EQ(run.engine->optimizer().step_count(), 0) << "AdamW's t does not advance";
  EXPECT_EQ(run.params(), initial) << "a skipped step changes no parameter";
  while (run.engine->last_step_skipped()) run.engine->train_batch(*run.sampler);
  const std::int64_t skipped = run.engine->skipped_steps();
  EXPECT_GT(skipped, 10);
  EXPECT_EQ(run.engine->loss_scale(), std::ldexp(1.0, 40 - static_cast<int>(skipped))) << "halved once per overflow";
  EXPECT_EQ(run.engine->optimizer().step_count(), 1);
  // The schedule waited: the first applied update used the rate of update 1, not of update skipped + 1.
  const optim::LRSchedule sched = optim::make_lr_schedule(run.cfg.scheduler, run.cfg.optimizer.lr);
  EXPECT_FLOAT_EQ(run.engine->lr(), sched.lr_for_update(0));
  EXPECT_NE(run.params(), initial);
  const auto losses = run.train(20);
  EXPECT_LT(losses.back(), losses.front()) << "after the overflows it trains";
  EXPECT_EQ(run.engine->optimizer().step_count(), run.engine->global_steps() - run.engine->skipped_steps());
}

TEST(L06_EngineFp16, OverflowAtTheMinimumScaleStopsWithDeepSpeedsMessage) {
  // The floor is 2^39: the first overflow halves 2^40 onto it, the second cannot go lower.
  TrainRun run(config_json(R"({"enabled": true, "initial_scale_power": 40, "hysteresis": 1, "min_loss_scale": 549755813888})"));
  run.engine->train_batch(*run.sampler);
  EXPECT_EQ(run.engine->loss_scale(), std::ldexp(1.0, 39));
  try {
    run.engine->train_batch(*run.sampler);
    FAIL() << "expected the minimum-scale error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Current loss scale already at minimum"), std::string::npos) << e.what();
  }
}

TEST(L06_EngineFp16, AStaticScaleTrainsAndStays) {
  TrainRun f32(config_json("")), f16(config_json(R"({"enabled": true, "loss_scale": 1024})"));
  const auto a = f32.train(10), b = f16.train(10);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_LT(std::abs(a[i] - b[i]) / a[i], 1e-2) << "step " << i;
  EXPECT_EQ(f16.engine->loss_scale(), 1024.0);
  EXPECT_EQ(f16.engine->skipped_steps(), 0);
}

TEST(L06_EngineFp16, ModelStatesAre16BytesPerParameterAsInBf16) {
  auto before = memory_stats();
  TrainRun r(config_json(R"({"enabled": true, "loss_scale": 128})"));
  const std::int64_t psi = r.engine->model().num_parameters();
  auto b = r.sampler->sample(0, 0);
  r.engine->backward(r.engine->forward(b.x, b.y));
  auto mid = memory_stats();
  EXPECT_EQ(mid.current(MemTag::param) - before.current(MemTag::param), 2 * psi);
  EXPECT_EQ(mid.current(MemTag::grad) - before.current(MemTag::grad), 2 * psi);
  r.engine->step();
  EXPECT_FALSE(r.engine->last_step_skipped());
  auto after = memory_stats();
  EXPECT_EQ(after.current(MemTag::optim) - before.current(MemTag::optim), 12 * psi);
  EXPECT_EQ(after.current(MemTag::grad) - before.current(MemTag::grad), 0);
  EXPECT_EQ(after.current(MemTag::optim_temp), 0);
}
