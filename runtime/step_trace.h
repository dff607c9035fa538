#pragma once
/// \file step_trace.h
/// `minitorch-train --trace DIR`: every rank records its events (trace/chrome_trace.h) and its frames
/// (trace/frames.h), and at the end rank 0 gathers them and writes, each atomically:
///   DIR/trace.json   the Chrome Trace Event format (docs/trace.md): Perfetto, chrome://tracing
///   DIR/frames.json  the state of every rank after each phase (docs/frames.md)
///   DIR/trace.html   the animated player of frames.json (trace/html_player.h)
#include <string>

#include <nlohmann/json.hpp>

#include "dist/process_group.h"
#include "trace/chrome_trace.h"
#include "runtime/engine.h"

namespace minitorch::runtime {

/// What frames.json says of the run (docs/frames.md `run`): strategy, stage, ranks, dtype, Ψ, G.
nlohmann::json frames_run(const Engine& engine, int world_size);

/// frames.json of what `events` recorded on every rank (trace/frames.h): every rank calls it (a
/// collective; nullptr group: one rank); rank 0 gets the document, the others null. Lessons print its
/// frames with trace/terminal_player.h:
/// \code
///   trace::TraceRecorder rec;
///   { events::Attach on(rec); engine->train_batch(sampler); }
///   nlohmann::json doc = runtime::gather_frames(rec.events(), &world, *engine);
///   if (world.rank() == 0) {
///     trace::FramesDoc frames = trace::parse_frames(doc, "lesson");
///     std::cout << trace::render_frame_text(frames, 3, {});
///   }
/// \endcode
nlohmann::json gather_frames(const std::vector<events::Event>& events, dist::ProcessGroup* group, const Engine& engine);

/// DIR/trace.json alone: every rank's recorded events gathered to rank 0, which writes them as one
/// Chrome trace (a temp file, then renamed; `about` in otherData). Every rank calls it (nullptr
/// group: one rank); returns the path on every rank. Pipeline runs write only this: their stages
/// hold different layers, which frames.json's per-rank state of one model does not describe.
std::string write_chrome_trace(const std::string& dir, const trace::TraceRecorder& recorder, dist::ProcessGroup* group,
                               const nlohmann::json& about);

/// Gathers every rank's recorded events to rank 0, which writes the three files into `dir` (each a
/// temp file, then renamed). `about` lands in trace.json's otherData (the run: strategy, stage,
/// ranks, ...). Every rank calls it (nullptr group: one rank). Returns the path of trace.json (on
/// every rank).
std::string write_step_trace(const std::string& dir, const trace::TraceRecorder& recorder, dist::ProcessGroup* group,
                             const Engine& engine, const nlohmann::json& about);

}  // namespace minitorch::runtime
