#pragma once
/// \file parallel.h
/// Threads per rank for CPU kernels (OpenMP and Eigen). Defaults to the cores of the machine divided
/// by the ranks on the node (MINITORCH_NUM_THREADS overrides), so oversubscribed runs do not thrash.
#include <cstdint>

namespace minitorch {

void set_num_threads(int n);
int num_threads();
/// Runs fn(begin, end) over [0, n) split into contiguous chunks across the threads; runs inline when
/// n < grain (not worth waking threads).
template <typename F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& fn);

}  // namespace minitorch

#include "minitorch/parallel_impl.h"
