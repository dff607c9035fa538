// Learning-rate schedules against values worked out by hand from DeepSpeed's formulas
// (deepspeed/runtime/lr_schedules.py).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "optim/lr_schedule.h"

using namespace minitorch::optim;

namespace {
LRScheduleConfig warmup(LRScheduleType type, std::int64_t steps, WarmupType wt) {
  LRScheduleConfig c;
  c.type = type;
  c.warmup_num_steps = steps;
  c.warmup_type = wt;
  return c;
}
// Schedules are computed in double and returned as float: compare to float precision.
void expect_lr(const LRSchedule& s, std::int64_t step, double want) {
  EXPECT_NEAR(s.lr_double(step), want, 1e-12 + 1e-12 * std::fabs(want)) << "step " << step;
  EXPECT_FLOAT_EQ(s.lr(step), static_cast<float>(want)) << "step " << step;
}
}  // namespace

TEST(L03_LRSchedule, ConstantIsBaseLr) {
  auto s = make_lr_schedule(LRScheduleConfig{}, 3e-4f);
  for (std::int64_t step : {-1, 0, 1, 1000, 1000000}) EXPECT_EQ(s.lr(step), 3e-4f);
}

TEST(L03_LRSchedule, WarmupLRLogMatchesDeepSpeed) {
  auto c = warmup(LRScheduleType::warmup_lr, 10, WarmupType::log);
  c.warmup_min_lr = 0.0;
  c.warmup_max_lr = 0.01;
  auto s = make_lr_schedule(c, 1.0f);
  expect_lr(s, -1, 0.0);                                   // before the first scheduler.step(): min
  expect_lr(s, 0, 0.0);                                    // log(1) = 0
  expect_lr(s, 4, 0.01 * std::log(5.0) / std::log(10.0));  // min + (max-min) * log(step+1)/log(W)
  expect_lr(s, 8, 0.01 * std::log(9.0) / std::log(10.0));
  expect_lr(s, 9, 0.01);                                   // log(10)/log(10) = 1
  expect_lr(s, 10, 0.01);                                  // after warmup: max, forever
  expect_lr(s, 100000, 0.01);
  EXPECT_EQ(s.lr_for_update(0), s.lr(-1));                 // DeepSpeed's engine steps the scheduler after the optimizer
  EXPECT_EQ(s.lr_for_update(5), s.lr(4));
}

TEST(L03_LRSchedule, WarmupLRLinearWithMinLr) {
  auto c = warmup(LRScheduleType::warmup_lr, 10, WarmupType::linear);
  c.warmup_min_lr = 1e-4;
  c.warmup_max_lr = 1e-3;
  auto s = make_lr_schedule(c, 1.0f);
  expect_lr(s, 0, 1e-4);
  expect_lr(s, 5, 1e-4 + 9e-4 * 5.0 / 10.0);  // min + (max-min) * step / W
  expect_lr(s, 9, 1e-4 + 9e-4 * 9.0 / 10.0);
  expect_lr(s, 10, 1e-3);
}

TEST(L03_LRSchedule, WarmupLRMaxDefaultsToOptimizerLrAndStepsClampToTwo) {
  auto c = warmup(LRScheduleType::warmup_lr, 1, WarmupType::log);  // DeepSpeed: max(2, warmup_num_steps)
  auto s = make_lr_schedule(c, 0.5f);
  expect_lr(s, 0, 0.0);
  expect_lr(s, 1, 0.5);  // log(2)/log(2): the max, which is the optimizer's lr when unset
}

TEST(L03_LRSchedule, WarmupDecayLRDecaysLinearlyToMinAtTotal) {
  auto c = warmup(LRScheduleType::warmup_decay_lr, 10, WarmupType::linear);
  c.warmup_min_lr = 1e-5;
  c.warmup_max_lr = 1e-3;
  c.total_num_steps = 110;
  auto s = make_lr_schedule(c, 1.0f);
  const double delta = 1e-3 - 1e-5;
  expect_lr(s, 5, 1e-5 + delta * 0.5);
  expect_lr(s, 10, 1e-5 + delta * (110.0 - 10) / 100.0);  // gamma = (total - step) / (total - warmup)
  expect_lr(s, 60, 1e-5 + delta * 0.5);
  expect_lr(s, 109, 1e-5 + delta * 0.01);
  expect_lr(s, 110, 1e-5);
  expect_lr(s, 500, 1e-5);                                // max(0, ...) keeps it at the minimum
}

TEST(L03_LRSchedule, WarmupDecayLRMaxDefaultIsDeepSpeeds0001) {
  auto c = warmup(LRScheduleType::warmup_decay_lr, 100, WarmupType::log);
  c.total_num_steps = 1000;
  auto s = make_lr_schedule(c, 0.5f);  // the optimizer's lr does not matter here
  expect_lr(s, 100, 0.001);
  expect_lr(s, 50, 0.001 * std::log(51.0) / std::log(100.0));
  expect_lr(s, 550, 0.001 * 450.0 / 900.0);
}

TEST(L03_LRSchedule, WarmupCosineLRMatchesDeepSpeed) {
  auto c = warmup(LRScheduleType::warmup_cosine_lr, 10, WarmupType::linear);
  c.total_num_steps = 110;
  c.warmup_min_ratio = 0.1;
  c.cos_min_ratio = 1e-4;
  const double base = 2e-3;
  auto s = make_lr_schedule(c, static_cast<float>(base));
  const double pi = std::numbers::pi;
  auto cosine = [&](double progress) { return 1e-4 + (1 - 1e-4) * (1 + std::cos(pi * progress)) / 2; };
  // The base is stored as the float the optimizer has.
  const double b = static_cast<float>(base);
  expect_lr(s, -1, 0.0);
  expect_lr(s, 0, b * 0.1);
  expect_lr(s, 5, b * (0.1 + 0.5 * 0.9));           // warmup_min_ratio + gamma * (1 - warmup_min_ratio)
  expect_lr(s, 10, b * cosine(1.0 / 100.0));         // real_last_step = step - W + 1
  expect_lr(s, 59, b * cosine(0.5));
  expect_lr(s, 109, b * 1e-4);                       // progress 1: cos_min_ratio
  expect_lr(s, 1000, b * 1e-4);                      // clamped, does not rise again
}

TEST(L03_LRSchedule, WarmupCosineLRLogWarmup) {
  auto c = warmup(LRScheduleType::warmup_cosine_lr, 10, WarmupType::log);
  c.total_num_steps = 20;
  auto s = make_lr_schedule(c, 1.0f);
  expect_lr(s, 3, std::log(4.0) / std::log(10.0));  // warmup_min_ratio 0 by default
}

TEST(L03_LRSchedule, RejectsBadParameters) {
  auto c = warmup(LRScheduleType::warmup_lr, 0, WarmupType::log);
  EXPECT_THROW(make_lr_schedule(c, 1.0f), std::runtime_error);
  auto d = warmup(LRScheduleType::warmup_decay_lr, 10, WarmupType::log);  // total_num_steps missing
  try {
    make_lr_schedule(d, 1.0f);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("total_num_steps"), std::string::npos) << e.what();
  }
}

TEST(L03_LRSchedule, NamesRoundTrip) {
  for (auto t : {LRScheduleType::warmup_lr, LRScheduleType::warmup_decay_lr, LRScheduleType::warmup_cosine_lr})
    EXPECT_EQ(parse_lr_schedule_type(lr_schedule_name(t)), t);
  EXPECT_THROW(parse_lr_schedule_type("OneCycle"), std::runtime_error);
  EXPECT_THROW(parse_warmup_type("exp"), std::runtime_error);
  EXPECT_EQ(parse_warmup_type("linear"), WarmupType::linear);
}
