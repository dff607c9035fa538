#pragma once
// Lesson 07's window on ZeRO-3's units (zero/stage3.h). UnitTrace is an events::Sink: attached while
// a forward or a backward runs, it prints, as they happen, every gather (all-gather of a unit's
// shards into its full buffer), every reduce-scatter of a unit's gradients and every release, with
// each unit's state and the `param` pool's current bytes after the event. It only reads what the
// library reports (the collectives' and the allocator's events) and what Stage3 shows (its units,
// partition()): the lesson watches the library, it does not drive it.
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "minitorch/events.h"
#include "nn/gpt.h"
#include "runtime/config.h"
#include "zero/stage3.h"

namespace lesson07 {

/// Every rank's `mine` (the same length on each), concatenated in rank order. Bookkeeping for the
/// printout: not recorded in g.stats() nor seen by an attached sink.
std::vector<double> gather(minitorch::dist::ProcessGroup& g, const std::vector<double>& mine);

/// Who holds what: for each unit, rank r's shard [a, b) and the parameter pieces it cuts (planned
/// for every rank here, as zero::Partition plans them on each).
void print_owners(const minitorch::zero::Stage3& s3, const minitorch::nn::GPT& model, const minitorch::runtime::Config& cfg);

/// The model-state bytes rank 0..N-1 holds at a step by runtime::exact_model_states (runtime/estimate.h):
/// the partition each rank builds, planned from names and shapes alone.
std::vector<double> planned_totals(const minitorch::nn::GPT& model, const minitorch::runtime::Config& cfg, int N);

/// Prints one line per unit event while attached (only rank 0's stdout is open: the others print
/// into /dev/null).
class UnitTrace : public minitorch::events::Sink {
 public:
  explicit UnitTrace(const minitorch::zero::Stage3& s3) : s3_(s3) {}
  void on_event(const minitorch::events::Event& e) override;
  /// The column heads: "outer h.0 h.1 ...", after the event's text.
  void print_header() const;
  /// Prints a gather still waiting for its label (call after detaching).
  void flush();

 private:
  /// Each unit's state (`changing` shown as `now`), then the param pool's current bytes (+ `not_yet_freed`:
  /// for a line about the moment before a free).
  std::string states(const minitorch::zero::Unit* changing = nullptr, char now = ' ',
                     std::int64_t not_yet_freed = 0) const;
  void line(const std::string& what, const std::string& tail) const;
  /// The unit whose gather is starting (buffer made, not yet gathering); nullptr: none.
  const minitorch::zero::Unit* gathering_now() const;
  /// The unit being released (gathered, its parameters dropped); nullptr: none.
  const minitorch::zero::Unit* releasing_now() const;

  const minitorch::zero::Stage3& s3_;
  std::mutex mutex_;
  // A gather begun: on demand or a prefetch? Stage3 counts its prefetches once the gather has started,
  // so the line is printed at the next event, when prefetched() has or has not moved.
  struct Gather {
    bool active = false;
    std::uint64_t id = 0;          // its comm begin event (its end event does not settle it)
    std::int64_t prefetched = 0;   // s3.prefetched() when it began
    std::string what, tail;        // the line, less its label
  } gather_;
  std::string pending_rs_;  // a reduce-scatter begun: printed with the release that follows it
  std::string pending_forward_;  // "transformer.h.K": its forward span opened, its body not yet begun
};

}  // namespace lesson07
