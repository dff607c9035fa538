#pragma once
// Lesson 04's caching-allocator beat: the allocations the baby GPT really makes on `sim`, recorded from the pool
// (record_pool_events, caching_allocator.h) phase by phase, replayed on lesson04::CachingAllocator, and printed
// as torch.cuda.memory_stats() would show them: how often the "system" (cudaMalloc) was called, how often a
// cached block was reused, and requested <= allocated <= reserved.
#include <cstdint>
#include <string>
#include <vector>

#include "caching_allocator.h"
#include "data/batch_sampler.h"
#include "runtime/config.h"

namespace lesson04 {

/// A named part of the work and the pool events it made.
struct Phase {
  std::string name;
  std::vector<PoolEvent> events;
};

/// What one phase did on the allocator.
struct PhaseFigures {
  std::string name;
  std::int64_t allocations = 0, frees = 0, bytes_requested = 0;  // this phase's requests (bytes asked)
  std::int64_t system_calls = 0, reuses = 0, splits = 0;         // this phase's segments, reuses, splits
  AllocatorStats after;                                          // the allocator's stats after the phase
};

/// The replay's figures (bytes).
struct ReplayFigures {
  std::vector<PhaseFigures> phases;
  std::int64_t peak_requested = 0, peak_allocated = 0;
  std::int64_t fragmentation_at_peak = 0;  // reserved − allocated when allocated stood at its peak
  std::int64_t real_peak = 0;              // the device pool's own peak over the same work (as passed)
  std::int64_t live_blocks = 0;            // blocks still allocated after the last phase
  std::int64_t reserved_before_empty_cache = 0, released_by_empty_cache = 0, segments_released = 0;
};

/// Replays `phases` in order on one CachingAllocator and prints a row per phase; the peak's
/// requested <= allocated <= reserved; the comparison with `real_peak` (memory_stats(device).peak_total over the
/// same work after reset_peak_memory, less what the pool held when it began); what empty_cache() returns at the
/// end; and what the last two phases that allocated cost in system calls. Throws std::logic_error when the
/// replay's peak requested differs from `real_peak` (a part of the work was not recorded).
ReplayFigures replay_phases(const std::vector<Phase>& phases, std::int64_t real_peak);

/// The beat: the baby GPT's engine made on sim (the model moved there), three training steps on `sampler`'s
/// batches, the engine released; each recorded from the sim pool and replayed by replay_phases. Then why step 2
/// still grew the cache: its peak is step 1's plus 8Ψ, AdamW's moments (printed against the measured growth).
ReplayFigures replay_gpt_steps_on_caching_allocator(const minitorch::runtime::Config& cfg, std::int64_t V,
                                                    const minitorch::data::BatchSampler& sampler);

}  // namespace lesson04
