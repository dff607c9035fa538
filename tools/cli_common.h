#pragma once
// What the command-line tools share: one clear error line and an exit status that says what failed.
#include <unistd.h>

#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>


#include "runtime/config.h"
#include "tools/cli/cli.h"

namespace minitorch::tools {

/// Exit statuses (README "The tools"): a usage or configuration error is the caller's input to fix.
constexpr int kExitFailure = 1, kExitUsage = 2;

/// kExitUsage for a runtime::ConfigError, kExitFailure for anything else.
/// The help text of --device and --device-memory.
inline constexpr const char* kDeviceHelp =
    "where each rank computes (overrides the config's device.type): cpu (default); sim = a simulated accelerator (the "
    "CPU kernels, but its own memory pool, with a capacity from --device-memory, and every host<->device copy "
    "counted); cuda = the GPU numbered by the rank's local rank on its node (one rank per GPU, as DeepSpeed's launcher "
    "maps them); cuda:N = GPU N for every rank of the node (ranks share it)";
inline constexpr const char* kDeviceMemoryHelp =
    "the simulated accelerator's capacity per rank (overrides the config's device.memory; --device sim): 24MiB, 1.5GB, or "
    "a number of bytes";

/// Prints "warning: <what>" on stderr as one write: under mpirun a rank's stdout and stderr are merged, and
/// a line written in pieces can be cut by another stream's output between them.
inline void warn(const std::string& what) {
  const std::string line = "warning: " + what + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

inline int exit_status_of(const std::exception& e) {
  return dynamic_cast<const runtime::ConfigError*>(&e) ? kExitUsage : kExitFailure;
}

/// Parses the command line and runs `body`; a usage error prints CLI11's message and exits 2
/// (CLI11's own codes, 105-111, would say nothing to a shell), --help exits 0; any failure in `body`
/// prints "error: <what>" and exits 2 for a configuration error, 1 for anything else.
inline int run_tool(cli::Parser& parser, int argc, char** argv, const std::function<void()>& body) {
  if (int status = parser.parse(argc, argv); status >= 0) return status;
  // A file-size limit (`ulimit -f`) then fails the write with EFBIG, which the writer reports and cleans
  // up after (write_file_atomic removes its temp file), instead of SIGXFSZ killing the tool mid-save.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    body();
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "error: " << e.what() << "\n";
    return exit_status_of(e);
  }
  return 0;
}

/// Makes sure `path` can be written later (creates its directory, probes it with a temporary file),
/// so an unwritable output fails before training rather than after it. `what` names the flag.
/// `directory_ok`: `path` will be a directory (a sharded checkpoint), so an existing one is fine.
inline void ensure_writable(const std::string& path, const std::string& what, bool directory_ok = false) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(what + " '" + path + "': cannot create its directory '" + dir.string() + "': " + ec.message());
  if (!directory_ok && fs::is_directory(path, ec))
    throw std::runtime_error(what + " '" + path + "' is a directory; give a file name");
  const std::string probe = path + ".probe." + std::to_string(::getpid());
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) throw std::runtime_error(what + " '" + path + "': its directory is not writable; choose another path");
  std::fclose(f);
  std::remove(probe.c_str());
}

}  // namespace minitorch::tools
