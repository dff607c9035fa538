#include "tools/launcher/program.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "runtime/config_error.h"

namespace minitorch::launcher {

namespace {
using runtime::ConfigError;

enum class Found { no, directory, not_executable, yes };

Found probe(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Found::no;
  if (S_ISDIR(st.st_mode)) return Found::directory;
  if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) return Found::not_executable;
  return Found::yes;
}

/// PATH as execvp reads it.
std::string search_path() {
  if (const char* path = std::getenv("PATH")) return path;
  std::string fallback(::confstr(_CS_PATH, nullptr, 0), '\0');
  ::confstr(_CS_PATH, fallback.data(), fallback.size());
  fallback.resize(fallback.empty() ? 0 : fallback.size() - 1);
  return fallback;
}
}  // namespace

void check_program(const std::string& program) {
  std::ostringstream why;  // not const char* + std::string&&: GCC 12's -Wrestrict misfires on it
  if (program.find('/') != std::string::npos) {
    const Found f = probe(program);
    if (f == Found::yes) return;
    why << "the program " << program
        << (f == Found::no          ? " does not exist (check the path; it is opened from the working directory)"
            : f == Found::directory ? " is a directory, not a program"
                                    : " is not an executable file (no execute permission: chmod +x?)");
    throw ConfigError(why.str());
  }
  const std::string path = search_path();
  std::string not_executable;
  std::istringstream dirs(path + ":");  // getline drops an empty last entry: the ':' keeps it
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    const Found f = probe(candidate);
    if (f == Found::yes) return;
    if (f == Found::not_executable && not_executable.empty()) not_executable = candidate;  // execvp skips it too
  }
  why << "the program " << program << " is not on PATH (" << path << ")";
  if (!not_executable.empty()) why << ": " << not_executable << " is there but is not an executable file";
  why << "; give its path (e.g. build/bin/" << program << ")";
  throw ConfigError(why.str());
}

void check_no_unknown_option(const std::vector<std::string>& program_and_args) {
  if (program_and_args.empty() || program_and_args.front().empty() || program_and_args.front()[0] != '-') return;
  throw ConfigError("unknown option " + program_and_args.front() +
                    ": minitorch-run's options come before the program (see --help), the program's after it");
}

}  // namespace minitorch::launcher
