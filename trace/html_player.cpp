/// \file html_player.cpp
#include "trace/html_player.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "minitorch/atomic_file.h"
#include "minitorch/json_limits.h"
#include "trace/frames_reader.h"
#include "trace/pipeline_player_html.h"  // generated from trace/pipeline_player.html
#include "trace/player_html.h"           // generated from trace/player.html by trace/embed_html.cmake

namespace minitorch::trace {

const std::string& player_template() {
  static const std::string page(detail::kPlayerHtml, sizeof(detail::kPlayerHtml) - 1);
  return page;
}

const std::string& pipeline_player_template() {
  static const std::string page(detail::kPipelinePlayerHtml, sizeof(detail::kPipelinePlayerHtml) - 1);
  return page;
}

namespace {

// `page` with its one `placeholder` replaced by `j`: compact JSON (invalid UTF-8 in a string becomes
// U+FFFD rather than an exception), then every "<" as \u003c: JSON has "<" only inside strings, where
// the escape means the same character, and without "<" the HTML parser cannot see "</script>" or "<!--"
// in the data.
std::string inline_json(const std::string& page, const std::string& placeholder, const nlohmann::json& j) {
  const std::string dumped = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string data;
  data.reserve(dumped.size() + dumped.size() / 16);
  for (char ch : dumped) {
    if (ch == '<') data += "\\u003c";
    else data += ch;
  }
  const std::size_t at = page.find(placeholder);
  if (at == std::string::npos || page.find(placeholder, at + 1) != std::string::npos)
    throw std::logic_error("the trace page must hold the placeholder " + placeholder + " exactly once");
  std::string out;
  out.reserve(page.size() + data.size());
  out.append(page, 0, at).append(data).append(page, at + placeholder.size(), std::string::npos);
  return out;
}

}  // namespace

std::string render_trace_html(const std::string& frames_json, const std::string& what) {
  nlohmann::json j;
  try {
    j = parse_json_bounded(frames_json, "frames '" + what + "'");
  } catch (const JsonLimitError& e) {
    throw FramesError(e.what());
  } catch (const nlohmann::json::exception& e) {
    throw FramesError("frames '" + what + "': malformed JSON: " + e.what());
  }
  parse_frames(j, what);  // the page shows only what the schema allows

  return inline_json(player_template(), kFramesPlaceholder, j);
}

std::string render_pipeline_html(const nlohmann::json& trace, const nlohmann::json& predicted) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw FramesError("pipeline trace: not a Chrome trace (no traceEvents array)");
  nlohmann::json slim = {{"traceEvents", nlohmann::json::array()},
                         {"otherData", trace.value("otherData", nlohmann::json::object())}};
  for (const auto& e : trace["traceEvents"])  // the memory counters are most of the file and not drawn
    if (e.value("ph", "") != "C") slim["traceEvents"].push_back(e);
  return inline_json(pipeline_player_template(), kPipelinePlaceholder, {{"trace", slim}, {"predicted", predicted}});
}

std::string write_trace_html(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw FramesError("'" + dir + "': no such directory");
  const std::string in = (fs::path(dir) / "frames.json").string();
  const std::string out = (fs::path(dir) / "trace.html").string();
  const std::string page = render_trace_html(read_frames_text(in), in);
  write_file_atomic(out, {{page.data(), page.size()}}, "trace page");
  return out;
}

std::string write_pipeline_html(const std::string& dir, const nlohmann::json& predicted) {
  namespace fs = std::filesystem;
  const std::string in = (fs::path(dir) / "trace.json").string();
  const std::string out = (fs::path(dir) / "trace.html").string();
  std::ifstream file(in);
  if (!file) throw FramesError("'" + in + "': cannot read it");
  std::stringstream text;
  text << file.rdbuf();
  nlohmann::json trace;
  try {
    trace = parse_json_bounded(text.str(), "trace '" + in + "'");
  } catch (const std::exception& e) {
    throw FramesError(std::string("'") + in + "': " + e.what());
  }
  const std::string page = render_pipeline_html(trace, predicted);
  write_file_atomic(out, {{page.data(), page.size()}}, "pipeline trace page");
  return out;
}

}  // namespace minitorch::trace
