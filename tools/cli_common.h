#pragma once
// What the command-line tools share: one clear error line and a non-zero exit for any failure.
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>

#include <CLI/CLI.hpp>

namespace minitorch::tools {

/// Parses the command line and runs `body`; a usage error prints CLI11's message (exit 2 for bad
/// arguments), any other failure prints "error: <what>" and exits 1.
inline int run_tool(CLI::App& app, int argc, char** argv, const std::function<void()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    body();
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace minitorch::tools
