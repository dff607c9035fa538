#pragma once
/// \file step_trace.h
/// `minitorch-train --trace DIR`: every rank records its events (trace/chrome_trace.h), and at the
/// end rank 0 gathers them and writes `DIR/trace.json` (Chrome Trace Event format; docs/trace.md),
/// atomically.
#include <string>

#include <nlohmann/json.hpp>

#include "dist/process_group.h"
#include "trace/chrome_trace.h"

namespace minitorch::zero {

/// Gathers every rank's recorded events to rank 0, which writes `dir/trace.json` (a temp file, then
/// renamed). `about` lands in the file's otherData (the run: strategy, stage, ranks, ...). Every
/// rank calls it (nullptr group: one rank). Returns the path written (on every rank).
std::string write_step_trace(const std::string& dir, const trace::TraceRecorder& recorder, dist::ProcessGroup* group,
                             const nlohmann::json& about);

}  // namespace minitorch::zero
