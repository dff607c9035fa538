#pragma once
// Lesson 04: a copy's accounting, as minitorch::copy_between keeps it (minitorch/allocator.cpp). Every byte that
// crosses between host memory and a device is counted once, by direction — h2d up to the device, d2h down to
// the host — and by purpose: the model's states (what offload moves) apart from the run's input and output
// (`io`: the batches going up, the loss coming down). A copy that crosses nothing (host to host, a device to
// itself) counts nothing; one between two devices goes through the host (Tensor::to), so it counts twice.
//
//   CopyLedger ledger;
//   ledger.add(Device::cpu(), Device::sim(), 4096, /*io=*/false);   // ledger.h2d == 4096
//   step_io_bytes(32, 64, 1)                                          // {(2·32·64 + 64)·4, 4} per step
#include <cstdint>

#include "minitorch/device.h"

namespace lesson04 {

enum class Direction { none, h2d, d2h, through_host };
const char* direction_name(Direction d);  // "none", "h2d", "d2h", "d2h + h2d"

/// Which way a copy from `from` to `to` crosses: none (the same memory), h2d, d2h, or through the host.
Direction direction_of(minitorch::Device from, minitorch::Device to);

/// The four counters of minitorch::TransferStats, kept by hand.
struct CopyLedger {
  std::int64_t h2d = 0, d2h = 0, io_h2d = 0, io_d2h = 0;
  /// Counts one copy of `bytes` from `from` to `to`; `io`: the run's input or output, not the model's states.
  void add(minitorch::Device from, minitorch::Device to, std::int64_t bytes, bool io);
};

/// What one optimizer step of the GPT moves between host and device as input and output, per rank: each of
/// the A micro-steps sends x and y up (B·T token ids each, i32) and the positions 0..T-1 (T, i32), and reads
/// the loss back (one f32).
struct StepIo {
  std::int64_t h2d = 0, d2h = 0;
};
StepIo step_io_bytes(std::int64_t B, std::int64_t T, std::int64_t A);

}  // namespace lesson04
