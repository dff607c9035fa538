// minitorch-trace DIR [--plain] [--auto] [--frame K] [--html]
// Replays DIR/frames.json (docs/frames.md; minitorch-train --trace DIR writes it) in the terminal, frame
// by frame: Enter shows the next frame, q (or the end of the input) quits. --auto prints every frame
// without waiting; --frame K prints frame K only (1-based, as the header counts); --plain leaves out
// the ANSI colours (the state characters say everything; NO_COLOR in the environment does the same).
// --html (re)writes DIR/trace.html, the animated page, from DIR/frames.json instead.
// Exit status: 0 done, 2 usage error (also --frame beyond the last frame), 1 a missing or bad frames.json.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli_common.h"
#include "trace/frames_reader.h"
#include "trace/html_player.h"
#include "trace/terminal_player.h"

using namespace minitorch;

int main(int argc, char** argv) {
  cli::Parser parser{"minitorch-trace: replay a traced step (DIR/frames.json) in the terminal, or write DIR/trace.html"};
  std::string dir;
  bool plain = false, autoplay = false, html = false;
  long long frame = 0;
  parser.option("DIR", dir, "the trace directory (minitorch-train --trace DIR): holds frames.json")->required();
  parser.flag("--plain", plain, "no ANSI colours: characters only");
  parser.flag("--auto", autoplay, "print every frame without waiting for Enter");
  parser.option("--frame", frame, "print frame K only (1-based)")->type_name("K")->check(cli::decimal<long long>(1));
  parser.flag("--html", html, "write DIR/trace.html from DIR/frames.json (and play nothing)");
  return tools::run_tool(parser, argc, argv, [&] {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw std::runtime_error("'" + dir + "': " + (fs::exists(dir, ec) ? "not a directory" : "no such directory") +
                               " (give the directory minitorch-train --trace wrote)");
    if (html) {
      const std::string out = trace::write_trace_html(dir);
      std::cout << "wrote " << out << "\n";
      return;
    }
    const trace::FramesDoc doc = trace::read_frames_file((fs::path(dir) / "frames.json").string());
    trace::TerminalOptions opt;
    opt.colour = !plain && std::getenv("NO_COLOR") == nullptr;
    const std::size_t total = doc.frames.size();
    if (frame > 0) {
      if (static_cast<unsigned long long>(frame) > total)
        throw runtime::ConfigError("--frame " + std::to_string(frame) + ": the trace has frames 1-" + std::to_string(total));
      std::cout << trace::render_run_header(doc, opt) << trace::render_frame_text(doc, static_cast<std::size_t>(frame - 1), opt);
      return;
    }
    std::cout << trace::render_run_header(doc, opt);
    if (!autoplay) std::cout << "(Enter: next frame, q: quit)\n";
    for (std::size_t i = 0; i < total; ++i) {
      std::cout << trace::render_frame_text(doc, i, opt) << std::flush;
      if (autoplay || i + 1 == total) continue;
      std::cout << "[frame " << i + 1 << "/" << total << "] Enter: next, q: quit > " << std::flush;
      std::string line;
      if (!std::getline(std::cin, line) || line == "q" || line == "Q") {
        std::cout << "\n(quit at frame " << i + 1 << "/" << total << ")\n";
        return;
      }
    }
  });
}
