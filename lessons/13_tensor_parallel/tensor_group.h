#pragma once
// What lesson 13's beats share. Every tensor group of 2 ranks runs the same beat on the same seed (as every
// replica of a real run does); rank 0 prints for its group {0, 1}, so each member's values reach it through a
// gather that the group's byte counters (dist::CommStats) leave out: they count only the lesson's own traffic.
#include <cstdint>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"

namespace lesson13 {

/// Every member's `mine` (the same length on each), in the group's rank order; not counted in group.stats().
std::vector<float> gather(minitorch::dist::ProcessGroup& group, const std::vector<float>& mine);
/// Every member's `mine` (the same shape on each), stacked in the group's rank order; not counted.
///   mine: (...) -> (group.size(), ...)
minitorch::Tensor gather(minitorch::dist::ProcessGroup& group, const minitorch::Tensor& mine);

/// Integers in [-2, 2] as f32, drawn from `gen`: their sums of products are exact, so a split layer's result
/// must equal the unsplit one to the bit.   -> (shape)
minitorch::Tensor small_integers(const minitorch::Shape& shape, minitorch::Generator& gen);

/// "name (rows, cols):" then one line per row, `format` per element.   m: (rows, cols), or (n) as one row
void print_matrix(const std::string& name, const minitorch::Tensor& m, const char* format = "%4.0f");
/// The row vector as "[a b c]" with `format` per element.   v: (n)
std::string row_text(const std::vector<float>& v, const char* format = "%.0f");

/// max |a − b| over all elements, in f32.   a, b: the same shape
double max_abs_diff(const minitorch::Tensor& a, const minitorch::Tensor& b);
/// "(= <what>)" when `diff` is within `tolerance`, else "(DIFFERENT)" (the lesson test looks for it).
std::string verdict(double diff, double tolerance, const std::string& what);
/// The same for two counts.
std::string verdict(std::int64_t measured, std::int64_t formula, const std::string& what);
/// "(= <what>)" when `holds`, else "(DIFFERENT)".
std::string verdict(bool holds, const std::string& what);

/// The collectives `stats` recorded from entry `from` on: how many, and their bytes.
struct Traffic {
  std::int64_t calls = 0, elements = 0, bytes = 0;
};
Traffic traffic_since(const minitorch::dist::CommStats& stats, std::size_t from);

}  // namespace lesson13
