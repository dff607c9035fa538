#pragma once
/// \file html_player.h
/// trace.html: the animated player of a frames.json (docs/frames.md), one self-contained page (inline
/// SVG, script and style; no network). The page is trace/player.html, compiled into the library, with
/// the frames inlined in a <script type="application/json"> block, every "<" written as \u003c so that
/// no string in the data ("</script>" in a caption) can end the block.
///
/// \code
///   minitorch::trace::write_trace_html("out/trace");  // reads out/trace/frames.json, writes out/trace/trace.html
/// \endcode
#include <string>

namespace minitorch::trace {

/// The page for `frames_json` (the text of a frames.json); checks it first (FramesError naming `what`).
std::string render_trace_html(const std::string& frames_json, const std::string& what = "frames.json");
/// Reads `dir`/frames.json and writes `dir`/trace.html atomically; returns the path written.
std::string write_trace_html(const std::string& dir);
/// The page template itself (trace/player.html as built), with its data placeholder.
const std::string& player_template();
/// The placeholder inside <script id="frames"> that render_trace_html replaces.
inline constexpr const char* kFramesPlaceholder = "__MINITORCH_FRAMES_JSON__";

}  // namespace minitorch::trace
