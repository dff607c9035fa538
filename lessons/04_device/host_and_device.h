#pragma once
// Lesson 04, beat 1: a tensor on the device, the copies to and from it counted (by the library and, beside it,
// by copy_ledger.h, task L04.3), a forgotten copy, and the copies one training step makes.
#include <cstdint>

#include "data/batch_sampler.h"
#include "runtime/config.h"

namespace lesson04 {

/// A 1 MiB tensor up to sim, a kernel on it there, its result down: each copy printed with the pools and the
/// counters, the ledger against minitorch::transfer_stats (throws if they differ); on a usable GPU the same
/// copies of 64 MiB timed (GB/s each way).
void copies_between_host_and_device();

/// An op on a host tensor and a device tensor: one error naming both devices, never a silent copy.
void a_forgotten_copy();

/// One step of the baby GPT on sim with the run report attached: its transfers_last_step against step_io_bytes.
void a_training_steps_copies(const minitorch::runtime::Config& cfg, std::int64_t V,
                             const minitorch::data::BatchSampler& sampler);

}  // namespace lesson04
