#pragma once
// Lesson 04's beat "one kernel from naive to fast": the row softmax of cuda/softmax.cu as three CPU versions
// (row_softmax.h), checked against a double-precision oracle, timed on one core and set against the
// memory-bound limit this core's measured bandwidth gives; then the two GPU kernels, run on a GPU when
// there is one, else printed from the repository's source.
#include <cstdint>
#include <string>
#include <vector>

namespace lesson04 {

/// One version's measurement.
struct KernelTime {
  std::string name;
  double ms = 0;             // median of the timed runs
  double max_rel_error = 0;  // against softmax_rows_reference (max_relative_error)
  double gb_per_s = 0;       // 8 bytes per element (x read once, y written once) / ms
  double of_bound = 0;       // fraction of the memory-bound limit reached: bound_ms / ms
};

/// What naive_to_fast measured (the tests and the lesson's later beats read it).
struct KernelTable {
  std::int64_t rows = 0, cols = 0;
  double bandwidth_gb_s = 0;  // this core's streaming copy, read + write counted
  double bound_ms = 0;        // 8 * rows * cols bytes / bandwidth: no version of the kernel can beat it
  double ops_per_byte = 0;    // the kernel's arithmetic intensity (5 operations per 8 bytes)
  double compute_ms = 0;      // the wide version with its rows in cache (no memory traffic), scaled to all rows
  double tolerance = 0;       // the largest relative error a version may have (tolerance_for)
  std::vector<KernelTime> cpu;
  std::vector<KernelTime> gpu;  // empty without a GPU
  std::string gpu_note;         // the device that ran them, or why none did
};

/// The largest relative error a float version may show on rows of N logits of spread up to ~N(0, 2²):
/// float rounds x - m (|x - m| · 2^-24 relative, ~1e-6 here) and a chained sum drifts as ~√N ulps
/// (the naive version's 1024-long chain measured 2e-6). 1e-5 up to N = 4096, growing as √N after.
double tolerance_for(std::int64_t N);

/// Prints each halving of halve_max and halve_sum on one row of N random logits folded into kLanes
/// partials (lane l: j = l (mod kLanes)), as the warp's shuffle tree does it: one column per halving
/// (its offset), one line per lane, the count of distinct values left. Checks that halve_max / halve_sum
/// give the same bits as the tree printed; throws std::runtime_error if not.
void show_halving_tree(std::int64_t N);

/// The three CPU versions on (rows, cols) random logits ~ N(0, 2²): each checked against the reference
/// (throws std::runtime_error above tolerance_for(cols)), timed (median of `reps` runs, caches emptied
/// before each), with GB/s and the fraction of this core's memory-bound limit. Prints the arithmetic
/// intensity, the compute floor (compute_ms) and the table, then the GPU part: cuda/softmax.cu's two
/// kernels run through the backend when the CUDA layer is built and a GPU answers, else one line saying
/// why and the kernels' source.
KernelTable naive_to_fast(std::int64_t rows, std::int64_t cols, int reps);

}  // namespace lesson04
