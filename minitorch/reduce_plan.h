#pragma once
/// \file reduce_plan.h
/// How every backend runs a sum over some dims: as a sequence of (O, R, I) -> (O, I) reductions of a
/// contiguous buffer. Adjacent dims that are all reduced or all kept merge into one group (size-1
/// dims drop out), and the last reduced group goes first, so e.g. (B, T, C) summed over {0, 1} is one
/// (1, B·T, C) -> (C) step.
#include <cstdint>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch {

struct ReducePlan {
  /// One reduction: the buffer is (outer, reduced, inner); the result is (outer, inner).
  struct Step {
    std::int64_t outer, reduced, inner;
  };
  Shape out_shape;          ///< the result's shape (reduced dims removed, or 1 with keepdim)
  std::vector<Step> steps;  ///< in order, each on the previous step's output; empty: nothing to sum
};

/// `dims`: non-negative, unique (ops::sum normalises them).
ReducePlan plan_sum(const Shape& shape, const std::vector<std::int64_t>& dims, bool keepdim);

}  // namespace minitorch
