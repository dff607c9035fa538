#pragma once
/// \file op_profile.h
/// Where a step's GPU time goes: a Backend that forwards every kernel of minitorch/backend_ops.def to
/// the CUDA kernels between two CUDA events and sums the elapsed times per op. `bench-gpu --profile`
/// installs it for a few steps and prints the table; the gap between the step's wall time and the
/// ops' sum is time the GPU waited for the host (launches, allocations, synchronising copies).
///
/// \code
///   cuda::OpProfile prof;      // installs itself for DeviceType::cuda
///   run_a_step();
///   prof.collect();            // waits for the recorded ops, adds their times up
///   prof.print(stdout, 1);     // per op: calls, GPU ms, host ms
/// \endcode
/// Nothing here needs the CUDA headers (the events live in the .cpp).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "minitorch/backend.h"

namespace minitorch::cuda {

class OpProfile {
 public:
  /// Installs the timing backend for cuda (cuda::init() must have succeeded).
  OpProfile();
  /// Puts the plain CUDA kernels back.
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  struct Row {
    std::string op;
    long long calls = 0;
    double gpu_ms = 0;   // between the op's two events on the device
    double host_ms = 0;  // inside the call on the host (a synchronising op shows here)
  };
  /// Waits for every recorded op and adds its time to the totals.
  void collect();
  /// The totals so far, the largest GPU time first.
  std::vector<Row> rows() const;
  /// One line per op, each divided by `steps`, with its share of the ops' GPU time.
  void print(std::FILE* out, int steps) const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace minitorch::cuda
