#pragma once
/// \file terminal_player.h
/// The terminal player of frames.json (docs/frames.md): minitorch-trace prints it, lessons can too.
/// Per frame: a header (frame k/total, step, micro, phase, and the bytes per rank the step's collectives
/// have sent up to this frame), the label and caption, the collective in
/// one line, then per rank one bar per kind (params, grads, optim) over the flat space, bucket by
/// bucket, and the rank's memory per tag. Every cell of a bar lies in one shard, so it has one owner:
/// with colour the cell is drawn in its owner's colour (the rank's own shard bold); the character
/// says the state, so `--plain` output (no escape codes) still says everything:
///
///   #  own shard    =  whole (replicated)    +  gathered    :  gathering    ~  local gradients
///   %  reducing (its reduce-scatter in flight)    *  reduced    .  freed
///
/// A bucket gets N·max(1, round(width·numel/Ψ/N)) cells (N ranks): a small bucket (the outer unit) is
/// drawn enlarged, so that each of its shards shows.
///
/// \code
///   auto doc = minitorch::trace::read_frames_file("out/trace/frames.json");
///   std::cout << render_run_header(doc, {}) << render_frame_text(doc, 0, {});
/// \endcode
#include <cstddef>
#include <string>

#include "trace/frames_reader.h"

namespace minitorch::trace {

struct TerminalOptions {
  bool colour = true;  ///< ANSI colours (false: --plain)
  int width = 64;      ///< about how many cells a bar spans
};

/// The lines printed once before the frames: the run and the legend.
std::string render_run_header(const FramesDoc& doc, const TerminalOptions& opt);
/// Frame `i` (0-based) as text, ending in a newline.
std::string render_frame_text(const FramesDoc& doc, std::size_t i, const TerminalOptions& opt);
/// "0.77 MiB", "19.5 KiB", "512 B": what both players print.
std::string format_bytes(std::int64_t bytes);

}  // namespace minitorch::trace
