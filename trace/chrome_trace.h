#pragma once
/// \file chrome_trace.h
/// Step traces in the Chrome Trace Event format (docs/trace.md), recorded from the per-rank event
/// sink (minitorch/events.h): open `trace.json` in https://ui.perfetto.dev or chrome://tracing.
///
/// One process per rank ("rank r"), one thread per stream of work, because `X` events on one thread
/// must nest and a rank's streams overlap:
///
///   tid 0  compute         X events: the engine's forward and backward per micro-step, the forward of
///                          every module, reduce_gradients (the wait), optimizer_step (Span pairs; they
///                          nest, being made on the rank's main thread); instants: the step_begin /
///                          step_end markers and the frames (trace/frames.h)
///   tid 1  all_reduce      X events from launch to completion, args: elements, bytes, the flat range
///   tid 2  reduce_scatter  and what it is ("zero bucket"), seq (the k-th launched). Two of one kind in
///   tid 3  all_gather      flight at once would not nest on one thread: the second goes on a lane of
///   tid 4  broadcast       its own, tid 10·stream + lane
///   tid 5  p2p             send / recv (args.peer: the other rank, world numbering; seq: the k-th
///                          transfer between the two ranks)
///   tid 6  h2d             copies host → device (minitorch::copy_between), args: bytes, tag, purpose
///   tid 7  d2h             copies device → host   ("model", or "io": the batches and the loss)
///   tid 8  host            ZeRO-Offload's optimizer step on the host (host_optimizer_step)
///   memory                 `C` counters, one track per allocator tag (bytes): the host's pool; on a
///   device memory          sim or GPU rank, the device's pool has its own
///
/// Flow arrows join the k-th launched collective of the same op on every rank (the ranks of one collective),
/// and each send to its receive. A pipeline run's compute track holds one `F<m>` / `B<m>` slice per
/// micro-batch m (pipeline/engine.cpp) around the engine's forward / backward: the schedule's picture.
///
/// \code
///   trace::TraceRecorder rec(&report);      // forwards every event to the run report too
///   { events::Attach on(rec); train(); }
///   nlohmann::json mine = trace::chrome_events(rec.events(), rank, rec.initial_memory());
///   // rank 0, with every rank's array (gathered):
///   std::string text = trace::chrome_trace(all_ranks).dump();
/// \endcode
#include <array>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "minitorch/allocator.h"
#include "minitorch/events.h"

namespace minitorch::trace {

/// A sink that keeps every event of a traced run, and passes each on to `forward` (the run report,
/// when both listen: one sink is attached per rank). Holds the allocator's bytes per tag at
/// construction, the counters' starting values.
class TraceRecorder : public events::Sink {
 public:
  /// `device`: the rank's device; not the host: its pool's bytes are kept too (the device's counters).
  explicit TraceRecorder(events::Sink* forward = nullptr, Device device = Device::cpu());
  void on_event(const events::Event& e) override;
  /// A copy of what was recorded so far.
  std::vector<events::Event> events() const;
  /// Keeps no more events (they are still forwarded): every recorded event stays in memory, so a long
  /// traced run stops recording after its first steps (minitorch-train --trace-steps).
  void stop_recording();
  bool recording() const;
  /// Bytes per tag (MemTag order) when recording began, and when.
  const std::array<std::int64_t, kNumMemTags>& initial_memory() const { return initial_memory_; }
  /// The same for the device's pool (zeros on a cpu rank).
  const std::array<std::int64_t, kNumMemTags>& initial_device_memory() const { return initial_device_memory_; }
  double start_us() const { return start_us_; }

 private:
  events::Sink* forward_;
  mutable std::mutex mutex_;
  std::vector<events::Event> events_;
  bool recording_ = true;
  std::array<std::int64_t, kNumMemTags> initial_memory_{}, initial_device_memory_{};
  double start_us_ = 0;
};

/// The thread (tid) of a collective's stream: 1 all_reduce, 2 reduce_scatter, 3 all_gather,
/// 4 broadcast, 5 send / recv; 0 (compute) for anything else.
int comm_thread(const std::string& op);

/// One rank's events as Chrome trace events (a JSON array; pid = rank, ts in µs from `start_us`).
/// Span pairs become X (compute) or b/e (comm) events; a begin whose end never came is closed at the
/// last timestamp with args.unfinished = true. `initial_memory` starts the memory counters (the host's
/// pool), `initial_device_memory` the device's ("device memory", drawn when the rank has device events).
nlohmann::json chrome_events(const std::vector<events::Event>& events, int rank,
                             const std::array<std::int64_t, kNumMemTags>& initial_memory, double start_us,
                             const std::array<std::int64_t, kNumMemTags>& initial_device_memory = {});

/// The file: {"traceEvents": [process/thread names, every rank's events, flows], "displayTimeUnit":
/// "ms", "otherData": `about`}. `per_rank[r]` is chrome_events(..., r, ...).
nlohmann::json chrome_trace(const std::vector<nlohmann::json>& per_rank, const nlohmann::json& about = {});

/// What is wrong with `trace` as a Chrome trace, or "" if nothing: required fields per `ph`, the
/// names of every pid / tid used, X events nesting on each thread, b/e balanced per id, flows
/// paired. The tests' oracle (and a check a user can run on a file).
std::string check_chrome_trace(const nlohmann::json& trace);

}  // namespace minitorch::trace
