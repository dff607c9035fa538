#pragma once
// Runs a command line (stdout and stderr together) and returns its exit code and output.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace mt_test {

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

inline std::string bin(const std::string& name) { return std::string(MT_BIN_DIR) + "/" + name; }
inline std::string source(const std::string& rel) { return std::string(MT_SOURCE_DIR) + "/" + rel; }

/// A fresh empty directory under the system temp dir, removed when the object dies.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("minitorch-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& contents) const {
    std::string p = (path / name).string();
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

/// Number of lines in `text` that start with "error:".
inline int error_lines(const std::string& text) {
  int n = 0;
  std::size_t pos = 0;
  while ((pos = text.find("error:", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') ++n;
    pos += 6;
  }
  return n;
}

}  // namespace mt_test
