#pragma once
// Template body of parallel_for (OpenMP); included by parallel.h.
#include <algorithm>
#include <exception>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace minitorch {

template <typename F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& fn) {
  if (n <= 0) return;
  int threads = num_threads();
  if (threads <= 1 || n < grain) {
    fn(std::int64_t{0}, n);
    return;
  }
  std::int64_t chunks = std::min<std::int64_t>(threads, (n + grain - 1) / grain);
  // An exception must not leave an OpenMP region (that is std::terminate): the first one thrown by any
  // chunk is kept and rethrown here, after every thread has finished, as if the loop had run inline.
  std::exception_ptr error;
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    std::int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    try {
      if (begin < end) fn(begin, end);
    } catch (...) {
#pragma omp critical(minitorch_parallel_for_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace minitorch
