#pragma once
// What the command-line tools share: one clear error line and a non-zero exit for any failure.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>

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

/// Makes sure `path` can be written later (creates its directory, probes it with a temporary file),
/// so an unwritable output fails before training rather than after it. `what` names the flag.
inline void ensure_writable(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(what + " '" + path + "': cannot create its directory '" + dir.string() + "': " + ec.message());
  if (fs::is_directory(path, ec))
    throw std::runtime_error(what + " '" + path + "' is a directory; give a file name");
  const std::string probe = path + ".probe." + std::to_string(::getpid());
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) throw std::runtime_error(what + " '" + path + "': its directory is not writable; choose another path");
  std::fclose(f);
  std::remove(probe.c_str());
}

}  // namespace minitorch::tools
