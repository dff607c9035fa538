// runtime/loss_scaler.h: DeepSpeed's dynamic loss-scale rule, step by step — hysteresis before halving,
// doubling after loss_scale_window good steps, consecutive_hysteresis, the floor and its error, and
// a static scale that only counts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/loss_scaler.h"

using minitorch::runtime::Fp16Config;
using minitorch::runtime::LossScaler;

namespace {
Fp16Config dynamic(int power, int window, int hysteresis, bool consecutive = false, double min_scale = 1) {
  Fp16Config c;
  c.enabled = true;
  c.initial_scale_power = power;
  c.loss_scale_window = window;
  c.hysteresis = hysteresis;
  c.consecutive_hysteresis = consecutive;
  c.min_loss_scale = min_scale;
  return c;
}

/// The scale after each step of `overflows` (true = that step overflowed).
std::vector<double> scales(LossScaler& s, const std::vector<bool>& overflows) {
  std::vector<double> out;
  for (bool o : overflows) {
    s.update(o);
    out.push_back(s.scale());
  }
  return out;
}
}  // namespace

TEST(L06_LossScaler, DeepSpeedDefaultsStartAt2To16) {
  Fp16Config c;
  c.enabled = true;
  LossScaler s(c);
  EXPECT_TRUE(s.dynamic());
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.hysteresis_left(), 2);
}

TEST(L06_LossScaler, HysteresisForgivesThenHalvesAndTheWindowDoubles) {
  LossScaler s(dynamic(4, 3, 2));  // S = 16, W = 3, h = 2
  //                 overflow: forgiven (h 2 -> 1), then halves; 3 good steps double and refill h
  EXPECT_EQ(scales(s, {true, true, false, false, false, true, true}),
            (std::vector<double>{16, 8, 8, 8, 16, 16, 8}));
  EXPECT_EQ(s.skipped(), 4);
  EXPECT_EQ(s.steps(), 7);
  EXPECT_EQ(s.hysteresis_left(), 1);
  // Once h is used up, every overflow halves until a window of good steps refills it.
  EXPECT_EQ(scales(s, {true, true}), (std::vector<double>{4, 2}));
}

TEST(L06_LossScaler, WithoutOverflowTheScaleDoublesEveryWindow) {
  LossScaler s(dynamic(0, 2, 2));  // S = 1, W = 2
  EXPECT_EQ(scales(s, {false, false, false, false, false}), (std::vector<double>{1, 2, 2, 4, 4}));
}

TEST(L06_LossScaler, ConsecutiveHysteresisRefillsAfterEveryGoodStep) {
  LossScaler plain(dynamic(4, 100, 2)), consecutive(dynamic(4, 100, 2, /*consecutive=*/true));
  const std::vector<bool> alternating = {true, false, true, false, true, false};
  EXPECT_EQ(scales(plain, alternating), (std::vector<double>{16, 16, 8, 8, 4, 4}));
  EXPECT_EQ(scales(consecutive, alternating), (std::vector<double>{16, 16, 16, 16, 16, 16}));
}

TEST(L06_LossScaler, TheScaleStopsAtItsMinimumAndThenErrors) {
  LossScaler s(dynamic(2, 1000, 1, false, /*min_scale=*/2));  // S = 4, floor 2, h = 1
  s.update(true);
  EXPECT_EQ(s.scale(), 2.0);
  try {
    s.update(true);
    FAIL() << "expected the minimum-scale error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Current loss scale already at minimum - cannot decrease scale anymore"),
              std::string::npos) << e.what();
  }
  LossScaler odd(dynamic(2, 1000, 1, false, /*min_scale=*/3));  // 4 -> max(2, 3) = 3: clamped, not below
  odd.update(true);
  EXPECT_EQ(odd.scale(), 3.0);
}

TEST(L06_LossScaler, AStaticScaleNeverChangesButCountsSkips) {
  Fp16Config c;
  c.enabled = true;
  c.loss_scale = 128;
  LossScaler s(c);
  EXPECT_FALSE(s.dynamic());
  EXPECT_EQ(scales(s, {true, false, true}), (std::vector<double>{128, 128, 128}));
  EXPECT_EQ(s.skipped(), 2);
}

TEST(L06_LossScaler, StateRoundTrips) {
  LossScaler a(dynamic(4, 3, 2)), b(dynamic(4, 3, 2));
  scales(a, {true, false, true, false});
  b.set_state(a.state());
  EXPECT_EQ(scales(a, {false, false, true}), scales(b, {false, false, true}));
  EXPECT_EQ(a.skipped(), b.skipped());
  EXPECT_THROW(b.set_state({0, 1, 0, -1, 0}), std::invalid_argument);
}
