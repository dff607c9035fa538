#pragma once
/// \file events.h
/// The per-rank event sink (docs/design.md §9): what happened on this rank, in order, for whoever listens.
///
/// Every layer reports here — the module call path (forward / backward of each module), the
/// collectives (op, elements, bytes, the flat range they moved), the allocator (tag, bytes), the
/// engine (phases of a step) — and the consumers (the run report, the step traces) attach a Sink.
/// It lives in `minitorch/` so a layer can report without including anything above it.
///
/// Cost when nobody listens: one relaxed load of a pointer and a branch per call site
/// (`events::enabled()`), no allocation, no string built. Emit sites are written
///   if (events::enabled()) events::emit({...});
/// or with the RAII `events::Span`, which checks the same flag.
///
/// \code
///   minitorch::events::Recorder rec;            // keeps every event in memory
///   {
///     minitorch::events::Attach on(rec);        // this rank now reports to rec
///     minitorch::events::Span s(minitorch::events::Category::compute, "forward", "transformer.h.0");
///     ...                                       // work; allocations inside are recorded too
///   }                                           // detached; rec.events() holds begin, allocs, end
/// \endcode
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minitorch/allocator.h"

namespace minitorch::events {

/// What kind of work an event belongs to (the trace draws one track per category and stream).
enum class Category : std::uint8_t {
  compute,  ///< forward / backward of a module, optimizer step, recomputation
  comm,     ///< a collective or point-to-point transfer
  memory,   ///< an allocation or release (tag, bytes)
  phase,    ///< a marker in the step (micro-step begins, boundary, optimizer step)
  transfer  ///< a copy between host and device memory: name "h2d" or "d2h", bytes, tag; scope "io" for batches and the loss
};
enum class Kind : std::uint8_t {
  begin,    ///< a span starts (paired with an `end` of the same id)
  end,      ///< a span ends
  instant,  ///< a moment: a phase marker, or a collective recorded as a whole
  alloc,    ///< `bytes` allocated under `tag`
  free      ///< `bytes` released from `tag`
};
const char* category_name(Category c);
const char* kind_name(Kind k);

/// One event. Fields that do not apply keep their defaults.
struct Event {
  Category category = Category::phase;
  Kind kind = Kind::instant;
  std::string name;                  ///< "forward", "backward", "all_reduce", "step", ...
  std::string scope;                 ///< module path ("transformer.h.0"), or what a collective moved
  std::int64_t elements = 0;         ///< comm: elements this rank sends (ring volume)
  std::int64_t bytes = 0;            ///< comm: elements × dtype size; memory: the allocation
  std::int64_t range_begin = -1;     ///< comm: the flat range [begin, end) moved, -1 if not flat
  std::int64_t range_end = -1;
  MemTag tag = MemTag::other;        ///< memory: the allocation's tag
  int device = 0;                    ///< memory: 0 = the host (cpu), 1 + index for the accelerator (cuda:index, sim)
  int peer = -1;                     ///< comm point-to-point: the other rank (its world rank)
  std::string group;                 ///< comm: the group's label ("data", "pipeline", "tensor"; "" = the world)
  std::int64_t step = -1;            ///< phase: the optimizer step (0-based), where known
  std::int64_t micro_step = -1;      ///< phase / compute: the micro-step inside the step, where known
  std::uint64_t id = 0;              ///< pairs a begin with its end (set by Span); memory: the block (Storage::block_id)
  double time_us = 0;                ///< filled by emit(): microseconds since the process started
  std::string detail;                ///< phase "frame": the rank's state as JSON (trace/frames.h)
};

/// A consumer. on_event may be called from the thread that did the work (the rank's main thread;
/// allocations may also come from kernel threads), so implementations lock if they keep state.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void on_event(const Event& e) = 0;
};

namespace detail {
extern std::atomic<Sink*> g_sink;
}
/// True while a sink is attached. Call sites test this before building an Event.
inline bool enabled() { return detail::g_sink.load(std::memory_order_relaxed) != nullptr; }
/// Stamps the time and hands the event to the attached sink (nothing if none).
void emit(Event e);
/// Microseconds since the process started (the clock of time_us).
double now_us();
/// A fresh id to pair a begin with its end.
std::uint64_t next_id();

/// Names, on this thread while it lives, the flat range the next collectives move ("bucket 3",
/// elements [begin, end) of the flat gradient space): the collectives copy it into their events.
/// \code
///   events::FlatRange what("bucket 3", 4096, 8192);
///   work = group.all_reduce_async(bucket_buffer);   // its comm events carry the range
/// \endcode
class FlatRange {
 public:
  FlatRange(std::string_view scope, std::int64_t begin, std::int64_t end);
  ~FlatRange();
  FlatRange(const FlatRange&) = delete;
  FlatRange& operator=(const FlatRange&) = delete;
  /// Copies the innermost live FlatRange of this thread into e.scope / range_begin / range_end.
  static void annotate(Event& e);

 private:
  std::string_view scope_;
  std::int64_t begin_, end_;
  const FlatRange* previous_;
};

/// Attaches `sink` while it lives (one sink at a time per process = per rank; a second Attach
/// throws std::logic_error). Detaches on destruction.
class Attach {
 public:
  explicit Attach(Sink& sink);
  ~Attach();
  Attach(const Attach&) = delete;
  Attach& operator=(const Attach&) = delete;
};

/// A begin event now and the matching end event when it goes out of scope (only if enabled() was
/// true at construction).
class Span {
 public:
  /// Nothing is copied or allocated unless a sink is attached.
  Span(Category category, const char* name, std::string_view scope = {}, std::int64_t micro_step = -1);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  std::optional<Event> end_;  // engaged only while a sink listens: nothing to build otherwise
};

/// A sink that keeps every event (tests, and the trace writer of a short run).
class Recorder : public Sink {
 public:
  void on_event(const Event& e) override;
  /// A copy of what was recorded so far.
  std::vector<Event> events() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

}  // namespace minitorch::events
