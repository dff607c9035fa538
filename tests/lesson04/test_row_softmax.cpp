// Lab task L04.1 (lessons/04_device/row_softmax.cpp): the butterfly halve_max / halve_sum, and the three row
// softmax versions built on it. The halving is held bit for bit to a butterfly computed here in the same
// order; typical wrong solutions each fail a test named for them: a halving missing (the max or the sum
// reaches only some lanes), a lane reading a value its partner already overwrote in this halving (sums
// counted twice), a plain left-to-right sum (other bits), lanes past n touched. The versions are held to the
// double-precision reference on odd shapes (tails), rows summing to 1, and logits of ±1000 (no overflow or
// 0/0: the max is subtracted, also when it sits in the tail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "lessons/04_device/row_softmax.h"

namespace {

using lesson04::kLanes;

// The butterfly as warp_max / warp_sum run it: for offset = n/2, ..., 1 every lane i takes
// op(before[i], before[i ^ offset]), `before` the values at the start of this halving.   lanes: (n) -> (n)
std::vector<float> butterfly(std::vector<float> lanes, const std::function<float(float, float)>& op) {
  const std::size_t n = lanes.size();
  for (std::size_t offset = n / 2; offset > 0; offset /= 2) {
    const std::vector<float> before = lanes;
    for (std::size_t i = 0; i < n; ++i) lanes[i] = op(before[i], before[i ^ offset]);
  }
  return lanes;
}
float max_op(float a, float b) { return std::fmax(a, b); }
float sum_op(float a, float b) { return a + b; }

std::vector<int> lane_counts() { return {1, 2, 4, 8, 16, 32, kLanes}; }

// Values whose float sum depends on the order of the additions: large terms that cancel, small ones that
// vanish beside them unless added first.   -> (n)
std::vector<float> order_sensitive(int n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> exponent(-3, 8);
  std::uniform_real_distribution<float> mantissa(1.f, 2.f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = (i % 2 ? -1.f : 1.f) * mantissa(gen) * std::pow(10.f, static_cast<float>(exponent(gen)));
  return v;
}

TEST(L04_T1_Halving, EveryLaneHoldsTheMaxAndTheSum) {
  for (int n : lane_counts()) {
    std::vector<float> maxima(static_cast<std::size_t>(n)), sums(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      maxima[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % n) - 3.5f;  // distinct, max anywhere
      sums[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);                 // exact in float
    }
    const std::vector<float> want_max = butterfly(maxima, max_op), want_sum = butterfly(sums, sum_op);
    lesson04::halve_max(maxima.data(), n);
    lesson04::halve_sum(sums.data(), n);
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      EXPECT_EQ(maxima[k], static_cast<float>(n - 1) - 3.5f) << "n " << n << " lane " << i;
      EXPECT_EQ(sums[k], static_cast<float>(n * (n + 1) / 2)) << "n " << n << " lane " << i;
      EXPECT_EQ(maxima[k], want_max[k]);
      EXPECT_EQ(sums[k], want_sum[k]);
    }
  }
}

// Wherever the max starts, every lane ends with it: one halving short, half the lanes would not.
TEST(L04_T1_Halving, TheMaxFromAnyLaneReachesEveryLane) {
  for (int n : lane_counts())
    for (int at = 0; at < n; ++at) {
      std::vector<float> lanes(static_cast<std::size_t>(n), -1.f);
      lanes[static_cast<std::size_t>(at)] = 5.f;
      lesson04::halve_max(lanes.data(), n);
      for (int i = 0; i < n; ++i)
        ASSERT_EQ(lanes[static_cast<std::size_t>(i)], 5.f) << "n " << n << ", max at " << at << ", lane " << i;
    }
}

// Lane i must read lane i ^ offset as it was before this halving: updated in place, in either direction,
// the second lane of a pair adds its partner's new value (a + b + b instead of a + b). All ones must give n.
TEST(L04_T1_Halving, ReadsOnlyTheValuesFromBeforeTheHalving) {
  for (int n : lane_counts()) {
    std::vector<float> lanes(static_cast<std::size_t>(n), 1.f);
    lesson04::halve_sum(lanes.data(), n);
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(lanes[static_cast<std::size_t>(i)], static_cast<float>(n)) << "n " << n << " lane " << i;
  }
}

// The additions happen in the butterfly's order, bit for bit (as a warp's shuffles do), not left to right.
TEST(L04_T1_Halving, SumsInTheButterflysOrder) {
  for (int n : lane_counts()) {
    if (n < 4) continue;  // with 2 lanes every order is the same
    int order_showed = 0;
    for (unsigned seed = 0; seed < 20; ++seed) {
      std::vector<float> lanes = order_sensitive(n, seed);
      float left_to_right = 0.f;
      for (float v : lanes) left_to_right += v;
      const std::vector<float> want = butterfly(lanes, sum_op);
      order_showed += want[0] != left_to_right;
      lesson04::halve_sum(lanes.data(), n);
      for (int i = 0; i < n; ++i)
        ASSERT_EQ(lanes[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)])
            << "n " << n << " seed " << seed << " lane " << i;
    }
    EXPECT_GT(order_showed, 0) << "n " << n << ": the test's values do not tell the orders apart";
  }
}

// halve_* works on lanes[0, n) only: a warp has no lane 32.
TEST(L04_T1_Halving, LeavesTheLanesPastNAlone) {
  for (int n : lane_counts()) {
    std::vector<float> lanes(static_cast<std::size_t>(2 * n), 42.f);
    for (int i = 0; i < n; ++i) lanes[static_cast<std::size_t>(i)] = static_cast<float>(i);
    lesson04::halve_max(lanes.data(), n);
    lesson04::halve_sum(lanes.data(), n);
    for (int i = n; i < 2 * n; ++i)
      EXPECT_EQ(lanes[static_cast<std::size_t>(i)], 42.f) << "n " << n << " lane " << i;
  }
}

// ---- the three versions ----

using Version = void (*)(const float*, float*, std::int64_t, std::int64_t);
struct Named {
  const char* name;
  Version run;
};
const Named kVersions[] = {{"naive", lesson04::softmax_rows_naive},
                           {"lanes", lesson04::softmax_rows_lanes},
                           {"wide", lesson04::softmax_rows_wide}};

// Float against double: the rounding of x - m (|x - m| · 2^-24) and of the sums, ~1e-6 on these rows.
constexpr double kTolerance = 1e-5;

// -> (rows, N) ~ N(mean, std²), the same for a seed
std::vector<float> logits(std::int64_t rows, std::int64_t N, float mean, float std, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(mean, std);
  std::vector<float> x(static_cast<std::size_t>(rows * N));
  for (float& v : x) v = normal(gen);
  return x;
}

// Runs every version on x: (rows, N) and holds it to the reference, element by element.
//   x: (rows, N)
void expect_all_match_reference(const std::vector<float>& x, std::int64_t rows, std::int64_t N,
                                const std::string& what) {
  std::vector<double> ref(x.size());
  lesson04::softmax_rows_reference(x.data(), ref.data(), rows, N);
  for (const Named& v : kVersions) {
    std::vector<float> y(x.size(), -1.f);
    v.run(x.data(), y.data(), rows, N);
    for (std::size_t i = 0; i < y.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << v.name << " " << what << ": y[" << i << "] = " << y[i];
      ASSERT_NEAR(y[i], ref[i], kTolerance * ref[i] + 1e-30) << v.name << " " << what << ", element " << i;
    }
  }
}

// Row lengths around the versions' steps: 1 lane, a tail only, one Packet, a Packet and a tail, 4 Packets (the
// wide step), the wide step and a tail, and a long row.
std::vector<std::int64_t> odd_widths() {
  return {1, 7, kLanes, kLanes + 1, 2 * kLanes + 5, 4 * kLanes, 4 * kLanes + 3, 1000};
}

TEST(L04_T1_RowSoftmax, MatchesTheReferenceOnOddShapes) {
  for (std::int64_t rows : {1, 5})
    for (std::int64_t N : odd_widths())
      expect_all_match_reference(logits(rows, N, 0.f, 2.f, static_cast<unsigned>(N)), rows, N,
                                 "(" + std::to_string(rows) + ", " + std::to_string(N) + ")");
}

TEST(L04_T1_RowSoftmax, RowsSumToOne) {
  const std::int64_t rows = 5;
  for (std::int64_t N : odd_widths()) {
    const std::vector<float> x = logits(rows, N, 0.f, 3.f, 7u);
    for (const Named& v : kVersions) {
      std::vector<float> y(x.size());
      v.run(x.data(), y.data(), rows, N);
      for (std::int64_t r = 0; r < rows; ++r) {
        double s = 0.0;
        for (std::int64_t j = 0; j < N; ++j) s += y[static_cast<std::size_t>(r * N + j)];
        EXPECT_NEAR(s, 1.0, kTolerance) << v.name << " N " << N << " row " << r;
      }
    }
  }
}

// exp(1000) overflows a float and exp(-1000) underflows to 0: only a softmax that subtracts each row's own
// max gets these rows right (row r is shifted by a different amount, so a max from another row fails too).
TEST(L04_T1_RowSoftmax, LargeLogitsDoNotOverflow) {
  const std::int64_t rows = 5;
  for (std::int64_t N : odd_widths()) {
    std::vector<float> x = logits(rows, N, 0.f, 2.f, 11u);
    for (std::int64_t r = 0; r < rows; ++r) {  // row shifts -1000, 200, 1400, -400, 800
      const float shift = 1000.f * static_cast<float>(r % 3 - 1) + 200.f * static_cast<float>(r);
      for (std::int64_t j = 0; j < N; ++j) x[static_cast<std::size_t>(r * N + j)] += shift;
    }
    expect_all_match_reference(x, rows, N, "logits near +-1000, N " + std::to_string(N));
  }
}

// The max may sit in any lane, the tail included (j >= N - N % kLanes): one logit 1000 above the others.
TEST(L04_T1_RowSoftmax, TheMaxMayBeInAnyLaneOrInTheTail) {
  for (std::int64_t N : {kLanes + 1, 2 * kLanes + 5, 4 * kLanes + 3, 4 * kLanes + kLanes + 2})
    for (std::int64_t at = 0; at < N; ++at) {
      std::vector<float> x = logits(1, N, 0.f, 1.f, 3u);
      x[static_cast<std::size_t>(at)] = 1000.f;
      expect_all_match_reference(x, 1, N, "N " + std::to_string(N) + ", max at " + std::to_string(at));
    }
}

}  // namespace
