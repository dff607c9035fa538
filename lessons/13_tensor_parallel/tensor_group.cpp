// Lesson 13's shared helpers (tensor_group.h): gathers for printing, small exact tensors, printing, verdicts.
#include "tensor_group.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lesson13 {

using namespace minitorch;

// mine: (k) on every member -> (size·k)
std::vector<float> gather(dist::ProcessGroup& group, const std::vector<float>& mine) {
  const auto k = static_cast<std::int64_t>(mine.size());
  return gather(group, Tensor::from_vector(mine, {k})).to_vector();
}

// mine: (...) -> (size, ...)
Tensor gather(dist::ProcessGroup& group, const Tensor& mine) {
  dist::NoRecordScope quiet(group);  // bookkeeping for the printout, not the lesson's traffic
  const Tensor flat = mine.detach().contiguous().reshape({mine.numel()});
  Shape stacked = mine.shape();
  stacked.insert(stacked.begin(), group.size());
  return group.all_gather(flat, mine.numel() * group.size()).reshape(stacked);
}

Tensor small_integers(const Shape& shape, Generator& gen) {
  std::vector<float> values(static_cast<std::size_t>(shape_numel(shape)));
  for (float& v : values) v = static_cast<float>(gen.next_below(5)) - 2.f;
  return Tensor::from_vector(values, shape);
}

// m: (rows, cols) or (n)
void print_matrix(const std::string& name, const Tensor& m, const char* format) {
  const std::int64_t rows = m.dim() == 1 ? 1 : m.size(0), cols = m.size(-1);
  const std::vector<float> v = m.detach().contiguous().to_vector();
  std::printf("%s %s:\n", name.c_str(), shape_str(m.shape()).c_str());
  for (std::int64_t i = 0; i < rows; ++i) {
    std::printf("    [");
    for (std::int64_t j = 0; j < cols; ++j) std::printf(format, static_cast<double>(v[static_cast<std::size_t>(i * cols + j)]));
    std::printf(" ]\n");
  }
}

std::string row_text(const std::vector<float>& v, const char* format) {
  std::string out = "[";
  char number[32];
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::snprintf(number, sizeof number, format, static_cast<double>(v[i]));
    if (i) out += ' ';
    out += number;
  }
  out += ']';
  return out;
}

// a, b: the same shape
double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.detach().contiguous().to_vector(), y = b.detach().contiguous().to_vector();
  if (x.size() != y.size()) return INFINITY;
  double diff = 0;
  for (std::size_t i = 0; i < x.size(); ++i) diff = std::max(diff, std::fabs(static_cast<double>(x[i]) - y[i]));
  return diff;
}

std::string verdict(double diff, double tolerance, const std::string& what) {
  return diff <= tolerance ? "(= " + what + ")" : "(DIFFERENT)";
}

std::string verdict(std::int64_t measured, std::int64_t formula, const std::string& what) {
  return measured == formula ? "(= " + what + ")" : "(DIFFERENT)";
}

std::string verdict(bool holds, const std::string& what) { return holds ? "(= " + what + ")" : "(DIFFERENT)"; }

Traffic traffic_since(const dist::CommStats& stats, std::size_t from) {
  Traffic t;
  for (std::size_t k = from; k < stats.log.size(); ++k) {
    ++t.calls;
    t.elements += stats.log[k].elements;
    t.bytes += stats.log[k].bytes;
  }
  return t;
}

}  // namespace lesson13
