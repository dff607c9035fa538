#pragma once
// Lesson 04's kernel beat: the row softmax of cuda/softmax.cu, written three times for one CPU core.
//
//   GPU (cuda/softmax.cu)                       CPU (here, single-threaded)
//   softmax_naive_kernel: one thread per row    softmax_rows_naive: one scalar stream walks a row 3 times
//   warp_softmax_row: one warp of 32 lanes      softmax_rows_lanes: one SIMD register of kLanes lanes;
//     per row, lane l takes j = l, l + 32, ...    lane l takes j = l, l + kLanes, ...
//   warp_max / warp_sum (cuda/common.cuh):      halve_max / halve_sum: the same xor butterfly over kLanes
//     __shfl_xor_sync butterfly over 32 lanes     partials stored to memory (lab task L04.1)
//   (a GPU's wide loads: float4 per lane)       softmax_rows_wide: 4 registers per step, exp once
//
// Everything runs on the calling thread only (one core): the beat compares versions, not core counts.
#include <cstdint>

#include "minitorch/cpu_eigen.h"  // Eigen/Core, with GCC 12's false AVX-512 warnings silenced

namespace lesson04 {

/// Eigen's SIMD register of floats for the instruction set this file is compiled for.
using Packet = Eigen::internal::packet_traits<float>::type;
// A Packet is a vector type with an alignment attribute, which a template argument drops: harmless for
// reading its traits.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
/// Floats per Packet: 16 with AVX-512, 8 with AVX, 4 with SSE (a GPU warp has 32 lanes).
inline constexpr int kLanes = Eigen::internal::unpacket_traits<Packet>::size;
#pragma GCC diagnostic pop

/// "AVX-512", "AVX" or "SSE": which registers the compiler was allowed to use (-march).
const char* simd_name();

// ---- lab task L04.1: the butterfly ----
/// The lane-halving (butterfly, xor) reduction of n partial values, n a power of 2, as warp_max /
/// warp_sum do with __shfl_xor_sync over 32 lanes: for offset = n/2, n/4, ..., 1 every lane i takes
/// op(lanes[i], lanes[i ^ offset]), both read before this halving wrote anything. After log2(n)
/// halvings every lane holds the result.   lanes: (n) -> lanes: (n), each = max (or sum) of the n
void halve_max(float* lanes, int n);
void halve_sum(float* lanes, int n);

// ---- the three versions; each: x: (rows, N) row-major -> y: (rows, N) ----
// y[r, j] = exp(x[r, j] - m_r) / sum_k exp(x[r, k] - m_r),  m_r = max_k x[r, k]

/// One row per "thread" (softmax_naive_kernel): three scalar passes (max, sum of exp, exp / sum), std::exp.
void softmax_rows_naive(const float* x, float* y, std::int64_t rows, std::int64_t N);
/// One row per "warp" of kLanes lanes (warp_softmax_row): lane l takes j = l, l + kLanes, ... (one Packet
/// load per step, Eigen's pmax / padd / pexp); the lanes' partial max and sum are reduced by halve_max /
/// halve_sum. A tail j >= N - N % kLanes folds into lane j % kLanes. Three passes, exp twice per element.
void softmax_rows_lanes(const float* x, float* y, std::int64_t rows, std::int64_t N);
/// Wide loads: 4 Packets per step into 4 independent accumulators (no chain of dependent adds on one
/// register), exp(x - m) written to y in the sum pass and scaled in place (exp once per element).
void softmax_rows_wide(const float* x, float* y, std::int64_t rows, std::int64_t N);
/// The oracle, in double.   x: (rows, N) f32 -> y: (rows, N) f64
void softmax_rows_reference(const float* x, double* y, std::int64_t rows, std::int64_t N);

// ---- measuring ----
/// Probabilities below this are compared absolutely (a float exp underflows near 1e-38; the beat's
/// logits never get there).
inline constexpr double kTinyProbability = 1e-20;
/// max_i |y[i] - ref[i]| / max(ref[i], kTinyProbability).   y: (n), ref: (n) -> scalar
double max_relative_error(const float* y, const double* ref, std::int64_t n);
/// The bandwidth probe: y = x with the same Packet loads and stores the kernels use, nothing else
/// (a memcpy may use non-temporal stores the kernels do not).   x: (n) -> y: (n)
void copy_packets(const float* x, float* y, std::int64_t n);

}  // namespace lesson04
