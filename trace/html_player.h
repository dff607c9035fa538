#pragma once
/// \file html_player.h
/// trace.html: the animated player of a frames.json (docs/frames.md), one self-contained page (inline
/// SVG, script and style; no network). The page is trace/player.html, compiled into the library, with
/// the frames inlined in a `<script type="application/json">` block, every "<" written as `\u003c` so that
/// no string in the data (`"</script>"` in a caption) can end the block.
///
/// \code
///   minitorch::trace::write_trace_html("out/trace");  // reads out/trace/frames.json, writes out/trace/trace.html
/// \endcode
#include <string>

#include <nlohmann/json.hpp>

namespace minitorch::trace {

/// The page for `frames_json` (the text of a frames.json); checks it first (FramesError naming `what`).
std::string render_trace_html(const std::string& frames_json, const std::string& what = "frames.json");
/// Reads `dir`/frames.json and writes `dir`/trace.html atomically; returns the path written.
std::string write_trace_html(const std::string& dir);
/// The page template itself (trace/player.html as built), with its data placeholder.
const std::string& player_template();
/// The placeholder inside `<script id="frames">` that render_trace_html replaces.
inline constexpr const char* kFramesPlaceholder = "__MINITORCH_FRAMES_JSON__";

/// trace.html of a pipeline run (trace/pipeline_player.html): the measured step of `trace` (a
/// trace.json document, its memory counters dropped) on each rank's row under the `predicted` timeline
/// (pipeline::timeline_json), with a cursor that plays the step. Throws FramesError if `trace` is not
/// a Chrome trace.
std::string render_pipeline_html(const nlohmann::json& trace, const nlohmann::json& predicted);
/// Reads `dir`/trace.json and writes `dir`/trace.html (the pipeline page) atomically; returns its path.
std::string write_pipeline_html(const std::string& dir, const nlohmann::json& predicted);
/// The pipeline page template, with its data placeholder.
const std::string& pipeline_player_template();
inline constexpr const char* kPipelinePlaceholder = "__MINITORCH_PIPELINE_JSON__";

}  // namespace minitorch::trace
