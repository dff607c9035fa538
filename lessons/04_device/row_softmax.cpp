// The row softmax three ways on one CPU core, each beside its GPU original in cuda/softmax.cu; the
// butterfly of cuda/common.cuh (warp_max, warp_sum) is lab task L04.1. No threads: every function runs
// on the caller's core, so the versions differ only in how one core walks a row.
#include "lessons/04_device/row_softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "minitorch/not_implemented.h"

namespace lesson04 {

namespace ei = Eigen::internal;

const char* simd_name() {
#if defined(__AVX512F__)
  return "AVX-512";
#elif defined(__AVX__)
  return "AVX";
#elif defined(__SSE2__)
  return "SSE";
#elif defined(__ARM_NEON)
  return "NEON";
#else
  return "none (scalar)";
#endif
}

// lanes: (n) -> lanes: (n), each lane = max of the n. A warp's `v = fmaxf(v, __shfl_xor_sync(.., v, o))`
// for o = 16, 8, 4, 2, 1: lane i reads lane i ^ o's value from before this halving.
void halve_max(float* lanes, int n) {
  // BEGIN SOLUTION L04.1
  for (int offset = n / 2; offset > 0; offset /= 2) {
    for (int i = 0; i < n; ++i) {
      const int partner = i ^ offset;
      if (partner < i) continue;  // each pair once: read both, then write both (a swap, as the shuffle is)
      const float mine = lanes[i], theirs = lanes[partner];
      lanes[i] = std::fmax(mine, theirs);
      lanes[partner] = std::fmax(theirs, mine);
    }
  }
  // END SOLUTION
}

// lanes: (n) -> lanes: (n), each lane = the sum of the n, added in the butterfly's order (a fixed tree:
// every lane gets the same bits, whatever n).
void halve_sum(float* lanes, int n) {
  // BEGIN SOLUTION L04.1
  for (int offset = n / 2; offset > 0; offset /= 2) {
    for (int i = 0; i < n; ++i) {
      const int partner = i ^ offset;
      if (partner < i) continue;
      const float mine = lanes[i], theirs = lanes[partner];
      lanes[i] = mine + theirs;
      lanes[partner] = theirs + mine;
    }
  }
  // END SOLUTION
}

namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();  // cuda/softmax.cu starts its max at -FLT_MAX

// The lanes' partial maxima -> the row max. Lane l of each of the `count` accumulators holds a max over
// some j = l (mod kLanes) < full; they fold lane by lane, the tail j in [full, N) folds into lane j - full
// (= j % kLanes), then the butterfly. (Folding through memory, not with pmax: GCC 12 warns falsely on an
// AVX-512 pmax of two registers it can prove constant, GCC bug 105593.)
//   acc: (count, kLanes), xr: (N) -> scalar
float row_max_of_lanes(const Packet* acc, int count, const float* xr, std::int64_t full, std::int64_t N) {
  alignas(64) float lanes[kLanes], other[kLanes];
  ei::pstoreu(lanes, acc[0]);
  for (int a = 1; a < count; ++a) {
    ei::pstoreu(other, acc[a]);
    for (int l = 0; l < kLanes; ++l) lanes[l] = std::fmax(lanes[l], other[l]);
  }
  for (std::int64_t j = full; j < N; ++j) lanes[j - full] = std::fmax(lanes[j - full], xr[j]);
  halve_max(lanes, kLanes);
  return lanes[0];  // every lane holds it, as every thread of the warp does
}

// The lanes' partial sums of exp(x - m) -> the row's sum. The tail's exps are computed here (and written to
// yr[j] if yr is given: the wide version keeps them).   s: (kLanes), xr: (N) -> scalar
float row_sum_of_lanes(Packet s, const float* xr, float* yr, float m, std::int64_t full, std::int64_t N) {
  alignas(64) float lanes[kLanes];
  ei::pstoreu(lanes, s);
  for (std::int64_t j = full; j < N; ++j) {
    const float e = std::exp(xr[j] - m);
    if (yr) yr[j] = e;
    lanes[j - full] += e;
  }
  halve_sum(lanes, kLanes);
  return lanes[0];
}

// ---- the three rows: xr: (N) -> yr: (N) ----

// softmax_naive_kernel's body for one row: three walks, one element at a time.
void naive_row(const float* xr, float* yr, std::int64_t N) {
  float m = kLowest;
  for (std::int64_t j = 0; j < N; ++j) m = std::fmax(m, xr[j]);
  float s = 0.f;
  for (std::int64_t j = 0; j < N; ++j) s += std::exp(xr[j] - m);  // one long chain of dependent adds
  for (std::int64_t j = 0; j < N; ++j) yr[j] = std::exp(xr[j] - m) / s;
}

// warp_softmax_row with kLanes lanes: each loop step is one load of kLanes neighbours (the warp's coalesced
// load), the lanes' partials meet in halve_max / halve_sum (warp_max / warp_sum).
void lanes_row(const float* xr, float* yr, std::int64_t N) {
  const std::int64_t full = N - N % kLanes;
  Packet m = ei::pset1<Packet>(kLowest);
  for (std::int64_t j = 0; j < full; j += kLanes) m = ei::pmax(m, ei::ploadu<Packet>(xr + j));
  const float row_max = row_max_of_lanes(&m, 1, xr, full, N);

  const Packet pm = ei::pset1<Packet>(row_max);
  Packet s = ei::pset1<Packet>(0.f);
  for (std::int64_t j = 0; j < full; j += kLanes) s = ei::padd(s, ei::pexp(ei::psub(ei::ploadu<Packet>(xr + j), pm)));
  const float inv = 1.f / row_sum_of_lanes(s, xr, nullptr, row_max, full, N);

  const Packet pinv = ei::pset1<Packet>(inv);
  for (std::int64_t j = 0; j < full; j += kLanes)
    ei::pstoreu(yr + j, ei::pmul(ei::pexp(ei::psub(ei::ploadu<Packet>(xr + j), pm)), pinv));
  for (std::int64_t j = full; j < N; ++j) yr[j] = std::exp(xr[j] - row_max) * inv;
}

// lanes_row with 4 registers in flight: a pmax / padd waits for the previous one on the same register
// (a few cycles each), so one accumulator leaves the core idle between loads; four independent ones
// keep it busy (a GPU hides the same latency by running other warps). The sum pass stores exp(x - m) to
// y and the last pass only scales it: one exp per element instead of two.
void wide_row(const float* xr, float* yr, std::int64_t N) {
  constexpr std::int64_t K = kLanes, step = 4 * K;
  const std::int64_t wide_end = N - N % step, full = N - N % K;
  Packet m0 = ei::pset1<Packet>(kLowest), m1 = m0, m2 = m0, m3 = m0;
  for (std::int64_t j = 0; j < wide_end; j += step) {
    m0 = ei::pmax(m0, ei::ploadu<Packet>(xr + j));
    m1 = ei::pmax(m1, ei::ploadu<Packet>(xr + j + K));
    m2 = ei::pmax(m2, ei::ploadu<Packet>(xr + j + 2 * K));
    m3 = ei::pmax(m3, ei::ploadu<Packet>(xr + j + 3 * K));
  }
  for (std::int64_t j = wide_end; j < full; j += K) m0 = ei::pmax(m0, ei::ploadu<Packet>(xr + j));
  // lane l of every accumulator saw only j = l (mod kLanes): combining them keeps lane l's meaning
  const Packet maxima[4] = {m0, m1, m2, m3};
  const float row_max = row_max_of_lanes(maxima, 4, xr, full, N);

  const Packet pm = ei::pset1<Packet>(row_max);
  Packet s0 = ei::pset1<Packet>(0.f), s1 = s0, s2 = s0, s3 = s0;
  for (std::int64_t j = 0; j < wide_end; j += step) {
    const Packet e0 = ei::pexp(ei::psub(ei::ploadu<Packet>(xr + j), pm));
    const Packet e1 = ei::pexp(ei::psub(ei::ploadu<Packet>(xr + j + K), pm));
    const Packet e2 = ei::pexp(ei::psub(ei::ploadu<Packet>(xr + j + 2 * K), pm));
    const Packet e3 = ei::pexp(ei::psub(ei::ploadu<Packet>(xr + j + 3 * K), pm));
    ei::pstoreu(yr + j, e0);
    ei::pstoreu(yr + j + K, e1);
    ei::pstoreu(yr + j + 2 * K, e2);
    ei::pstoreu(yr + j + 3 * K, e3);
    s0 = ei::padd(s0, e0);
    s1 = ei::padd(s1, e1);
    s2 = ei::padd(s2, e2);
    s3 = ei::padd(s3, e3);
  }
  for (std::int64_t j = wide_end; j < full; j += K) {
    const Packet e = ei::pexp(ei::psub(ei::ploadu<Packet>(xr + j), pm));
    ei::pstoreu(yr + j, e);
    s0 = ei::padd(s0, e);
  }
  const Packet s = ei::padd(ei::padd(s0, s1), ei::padd(s2, s3));
  const float inv = 1.f / row_sum_of_lanes(s, xr, yr, row_max, full, N);

  const Packet pinv = ei::pset1<Packet>(inv);
  for (std::int64_t j = 0; j < full; j += K) ei::pstoreu(yr + j, ei::pmul(ei::ploadu<Packet>(yr + j), pinv));
  for (std::int64_t j = full; j < N; ++j) yr[j] *= inv;
}

// x: (rows, N) -> y: (rows, N), one row after another on this core (a grid's rows, run in turn).
template <typename Row>
void each_row(Row row, const float* x, float* y, std::int64_t rows, std::int64_t N) {
  for (std::int64_t r = 0; r < rows; ++r) row(x + r * N, y + r * N, N);
}

}  // namespace

void softmax_rows_naive(const float* x, float* y, std::int64_t rows, std::int64_t N) {
  each_row(naive_row, x, y, rows, N);
}
void softmax_rows_lanes(const float* x, float* y, std::int64_t rows, std::int64_t N) {
  each_row(lanes_row, x, y, rows, N);
}
void softmax_rows_wide(const float* x, float* y, std::int64_t rows, std::int64_t N) {
  each_row(wide_row, x, y, rows, N);
}

// x: (rows, N) f32 -> y: (rows, N) f64. The exps and their sum in double, each exp once.
void softmax_rows_reference(const float* x, double* y, std::int64_t rows, std::int64_t N) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * N;
    double* yr = y + r * N;
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < N; ++j) m = std::max(m, static_cast<double>(xr[j]));
    double s = 0.0;
    for (std::int64_t j = 0; j < N; ++j) s += yr[j] = std::exp(static_cast<double>(xr[j]) - m);
    for (std::int64_t j = 0; j < N; ++j) yr[j] /= s;
  }
}

// y: (n), ref: (n) -> scalar
double max_relative_error(const float* y, const double* ref, std::int64_t n) {
  double worst = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(y[i]) - ref[i]) / std::max(ref[i], kTinyProbability);
    if (std::isnan(err)) return err;  // a NaN must not hide behind max()
    worst = std::max(worst, err);
  }
  return worst;
}

// x: (n) -> y: (n)
void copy_packets(const float* x, float* y, std::int64_t n) {
  const std::int64_t full = n - n % kLanes;
  for (std::int64_t j = 0; j < full; j += kLanes) ei::pstoreu(y + j, ei::ploadu<Packet>(x + j));
  for (std::int64_t j = full; j < n; ++j) y[j] = x[j];
}

}  // namespace lesson04
