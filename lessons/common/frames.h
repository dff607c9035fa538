#pragma once
// Frames in a lesson: what every rank holds after each phase of one step (docs/frames.md), recorded
// live and drawn by the terminal player (trace/terminal_player.h) — the pictures `minitorch-trace DIR`
// shows for a `minitorch-train --trace DIR` run, here for the step the beat just ran.
//
//   events::Recorder rec;                                    // the beat's one sink
//   { events::Attach on(rec); engine->train_batch(sampler); }
//   lesson::StepFrames frames(rec.events(), world, *engine, lesson::frames_in_colour(beats));  // collective
//   frames.print_legend();
//   frames.print(frames.find("all-reduce the gradients"));   // rank 0 prints; the others do nothing
//
// Each frame: its number among the step's frames, step, micro-step and phase; the label and caption the
// strategy recorded; the collective that led to it (op, bucket, flat range, elements and bytes per
// rank); then per rank one bar per kind (params, grads, optim) over the flat space, bucket by bucket
// (`#` own shard, `=` whole, `+` gathered, `:` gathering, `~` local gradients, `*` reduced, `.` freed),
// and the rank's allocator bytes per tag.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/beat.h"
#include "dist/process_group.h"
#include "minitorch/events.h"
#include "trace/frames_reader.h"
#include "trace/terminal_player.h"
#include "runtime/engine.h"
#include "runtime/step_trace.h"

namespace lesson {

/// Colour, as minitorch-trace decides it (NO_COLOR off, and a terminal to draw on), and never with
/// --auto: under mpirun a rank's standard output is a pseudo-terminal even when mpirun's own output
/// goes to a file or a pipe, so --auto (what the tests and CI run) prints the plain characters.
inline bool frames_in_colour(const Beats& beats) {
  return !beats.is_auto() && std::getenv("NO_COLOR") == nullptr && ::isatty(STDOUT_FILENO) == 1;
}

/// One sink that hands every event to two (only one sink may be attached at a time): a lesson's own
/// live printout and the recorder whose events become frames.
class Tee : public minitorch::events::Sink {
 public:
  Tee(minitorch::events::Sink& a, minitorch::events::Sink& b) : a_(a), b_(b) {}
  void on_event(const minitorch::events::Event& e) override {
    a_.on_event(e);
    b_.on_event(e);
  }

 private:
  minitorch::events::Sink& a_;
  minitorch::events::Sink& b_;
};

/// The frames of one recorded step on every rank, gathered to rank 0 (runtime::gather_frames).
class StepFrames {
 public:
  /// Collective: every rank calls it with the events it recorded (the step's step_begin among them).
  StepFrames(const std::vector<minitorch::events::Event>& recorded, minitorch::dist::ProcessGroup& world,
             const minitorch::runtime::Engine& engine, bool colour)
      : rank0_(world.rank() == 0) {
    opt_.colour = colour;
    const nlohmann::json doc = minitorch::runtime::gather_frames(recorded, &world, engine);
    if (rank0_) doc_ = minitorch::trace::parse_frames(doc, "the lesson's recorded step");
  }

  /// The first frame at or after `from` labelled `label` (and in `phase`, unless empty), 0-based.
  /// On the other ranks 0 (they print nothing). Throws if rank 0 recorded no such frame.
  std::size_t find(const std::string& label, const std::string& phase = "", std::size_t from = 0) const {
    if (!rank0_) return 0;
    for (std::size_t i = from; i < doc_.frames.size(); ++i)
      if (doc_.frames[i].label == label && (phase.empty() || doc_.frames[i].phase == phase)) return i;
    throw std::runtime_error("the recorded step has no frame '" + label + "'" + (phase.empty() ? "" : " in " + phase));
  }
  /// The frame's label (rank 0; "" elsewhere).
  std::string label(std::size_t i) const { return rank0_ ? doc_.frames.at(i).label : ""; }
  std::size_t size() const { return doc_.frames.size(); }
  /// The bytes per rank of the collective that led to frame i (0: none; 0 on the other ranks).
  long long bytes(std::size_t i) const {
    return rank0_ && doc_.frames.at(i).collective ? static_cast<long long>(doc_.frames.at(i).collective->bytes) : 0;
  }

  /// Rank `rank`'s allocator bytes under `tag` ("comm", ...) at frame i (0 on the other ranks).
  long long memory(std::size_t i, int rank, const std::string& tag) const {
    if (!rank0_) return 0;
    for (const auto& [t, bytes] : doc_.frames.at(i).ranks.at(static_cast<std::size_t>(rank)).memory)
      if (t == tag) return static_cast<long long>(bytes);
    return 0;
  }

  /// The run (strategy, ranks, Ψ, buckets, frames) and what the characters of a bar mean.
  void print_legend() const {
    if (rank0_) std::fputs(minitorch::trace::render_run_header(doc_, opt_).c_str(), stdout);
  }
  /// Frame i, as minitorch-trace draws it.
  void print(std::size_t i) const {
    if (!rank0_) return;
    std::fputs(minitorch::trace::render_frame_text(doc_, i, opt_).c_str(), stdout);
    std::fflush(stdout);
  }

 private:
  bool rank0_;
  minitorch::trace::TerminalOptions opt_;
  minitorch::trace::FramesDoc doc_;
};

}  // namespace lesson
