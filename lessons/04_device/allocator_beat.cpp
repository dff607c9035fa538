// Lesson 04: the caching-allocator beat (allocator_beat.h).
#include "allocator_beat.h"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "gpt_on_device.h"
#include "minitorch/allocator.h"

namespace lesson04 {

using namespace minitorch;

namespace {
double in_mib(std::int64_t bytes) { return static_cast<double>(bytes) / 1048576.0; }

// The byte sizes a phase asked for, in order (two phases with the same list made the same requests).
std::vector<std::int64_t> requests_of(const Phase& phase) {
  std::vector<std::int64_t> sizes;
  for (const PoolEvent& e : phase.events)
    if (e.alloc) sizes.push_back(e.bytes);
  return sizes;
}

// The beat's point: "step 2 called the system 4 times ...; step 3 made the same 226 requests and called it 0 times".
void print_reuse(const std::vector<Phase>& phases, const std::vector<PhaseFigures>& figures) {
  std::vector<std::size_t> allocating;  // the phases that asked for memory
  for (std::size_t i = 0; i < figures.size(); ++i)
    if (figures[i].allocations > 0) allocating.push_back(i);
  if (allocating.size() < 2) return;
  const PhaseFigures& a = figures[allocating[allocating.size() - 2]];
  const PhaseFigures& b = figures[allocating.back()];
  const bool same = requests_of(phases[allocating[allocating.size() - 2]]) == requests_of(phases[allocating.back()]);
  const std::string what = (same ? "the same " : "") + std::to_string(b.allocations) + " requests";
  std::printf("%s called the system %lld times for its %lld requests;\n%s made %s and called it %lld times",
              a.name.c_str(), static_cast<long long>(a.system_calls), static_cast<long long>(a.allocations),
              b.name.c_str(), what.c_str(), static_cast<long long>(b.system_calls));
  if (b.system_calls == 0) std::printf(": every request reused a cached block");
  std::printf(".\n");
}
}  // namespace

// phases of recorded events, the pool's real peak (bytes) -> the replay's figures, printed as they come.
ReplayFigures replay_phases(const std::vector<Phase>& phases, std::int64_t real_peak) {
  CachingAllocator allocator;
  EventReplay replay(allocator);
  ReplayFigures r;
  r.real_peak = real_peak;
  std::printf("%-26s %8s %6s %9s %7s %7s %7s | %-15s  %-15s  %s\n", "phase", "requests", "frees", "MiB asked",
              "system", "reuses", "splits", "requested", "allocated", "reserved");
  std::printf("%-26s %8s %6s %9s %7s %7s %7s | %s\n", "", "", "", "", "calls", "", "", "MiB after the phase (peak so far)");
  for (const Phase& phase : phases) {
    const AllocatorStats before = allocator.stats();
    replay.play(phase.events);
    PhaseFigures f;
    f.name = phase.name;
    for (const PoolEvent& e : phase.events) {
      f.allocations += e.alloc ? 1 : 0;
      f.frees += e.alloc ? 0 : 1;
      f.bytes_requested += e.alloc ? e.bytes : 0;
    }
    f.after = allocator.stats();
    f.system_calls = f.after.segments_allocated - before.segments_allocated;
    f.reuses = f.after.reuses - before.reuses;
    f.splits = f.after.splits - before.splits;
    const AllocatorStats& a = f.after;
    std::printf("%-26s %8lld %6lld %9.2f %7lld %7lld %7lld | %6.2f (%6.2f)  %6.2f (%6.2f)  %6.2f (%6.2f)\n",
                f.name.c_str(), static_cast<long long>(f.allocations), static_cast<long long>(f.frees),
                in_mib(f.bytes_requested), static_cast<long long>(f.system_calls), static_cast<long long>(f.reuses),
                static_cast<long long>(f.splits), in_mib(a.requested), in_mib(a.peak_requested), in_mib(a.allocated),
                in_mib(a.peak_allocated), in_mib(a.reserved), in_mib(a.peak_reserved));
    r.phases.push_back(f);
  }
  const AllocatorStats end = allocator.stats();
  r.peak_requested = end.peak_requested;
  r.peak_allocated = end.peak_allocated;
  r.fragmentation_at_peak = replay.fragmentation_at_peak();
  r.live_blocks = replay.live_blocks();

  // At the peak: what callers asked, what their 512 B-rounded blocks hold, what the segments around them hold.
  std::printf("at the peak: requested %.2f MiB <= allocated %.2f MiB (+%lld B: sizes rounded to 512 B, rests too small\n"
              "to split) <= reserved %.2f MiB (+%.2f MiB cached in free blocks: fragmentation = reserved - allocated)\n",
              in_mib(r.peak_requested), in_mib(r.peak_allocated),
              static_cast<long long>(r.peak_allocated - r.peak_requested),
              in_mib(r.peak_allocated + r.fragmentation_at_peak), in_mib(r.fragmentation_at_peak));
  const bool equal = r.peak_requested == real_peak;
  std::printf("the replay's peak requested %lld B, the sim pool's own peak %lld B %s\n",
              static_cast<long long>(r.peak_requested), static_cast<long long>(real_peak),
              equal ? "(equal)" : "(DIFFERENT)");
  if (!equal)
    throw std::logic_error("the replay's peak requested (" + std::to_string(r.peak_requested) +
                           " B) differs from the pool's (" + std::to_string(real_peak) +
                           " B): part of the work was not recorded");

  // Freed blocks stay reserved: only empty_cache() hands wholly free segments back to the device.
  r.reserved_before_empty_cache = end.reserved;
  r.released_by_empty_cache = allocator.empty_cache();
  r.segments_released = allocator.stats().segments_freed - end.segments_freed;
  std::printf("at the end: %lld blocks live, allocated %.2f MiB, reserved %.2f MiB: a freed tensor's block went back to\n"
              "the cache, not to the device. empty_cache() gives back %.2f MiB (%lld segments wholly free), %.2f MiB stay.\n",
              static_cast<long long>(r.live_blocks), in_mib(end.allocated), in_mib(r.reserved_before_empty_cache),
              in_mib(r.released_by_empty_cache), static_cast<long long>(r.segments_released),
              in_mib(allocator.stats().reserved));
  print_reuse(phases, r.phases);
  return r;
}

// cfg, V: the baby GPT's config and vocabulary; sampler: its batches -> the replay's figures (printed).
ReplayFigures replay_gpt_steps_on_caching_allocator(const runtime::Config& cfg, std::int64_t V,
                                                    const data::BatchSampler& sampler) {
  const Device sim = Device::sim();
  const std::int64_t held_before = memory_stats(sim).current_total;  // 0 unless an earlier beat left something
  reset_peak_memory(sim);
  std::unique_ptr<runtime::Engine> engine;
  std::vector<Phase> phases;
  phases.push_back({"model to sim (initialize)", record_pool_events(sim, [&] { engine = baby_engine(cfg, V, "sim"); })});
  for (int step = 1; step <= 3; ++step)  // step 3: the first with the same requests as the one before it
    phases.push_back({"step " + std::to_string(step), record_pool_events(sim, [&] { engine->train_batch(sampler); })});
  const std::int64_t psi = engine->model().num_parameters();
  phases.push_back({"engine released", record_pool_events(sim, [&] { engine.reset(); })});
  const ReplayFigures r = replay_phases(phases, memory_stats(sim).peak_total - held_before);

  // Why step 2 still grew the cache: AdamW's moments (2 x 4 B per parameter) are made at step 1's update, after
  // its backward, so they first sit under a forward and backward in step 2.
  const std::int64_t growth = r.phases[2].after.peak_requested - r.phases[1].after.peak_requested;
  std::printf("step 2 peaks %lld B above step 1: 8Ψ = 8 x %lld = %lld B %s, AdamW's two moments, made at step 1's\n"
              "update, live through step 2's forward and backward. From step 3 on the cache holds what a step needs.\n",
              static_cast<long long>(growth), static_cast<long long>(psi), static_cast<long long>(8 * psi),
              growth == 8 * psi ? "(equal)" : "(DIFFERENT)");
  return r;
}

}  // namespace lesson04
