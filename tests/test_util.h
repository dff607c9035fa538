#pragma once
// Helpers the test suites share: a per-test temporary directory and the message of an expected error.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace mt_test {

/// The message of the exception `f` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// A fresh directory for the current test (named after it and the process), removed at the end.
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "outside-a-test";
    dir = std::filesystem::temp_directory_path() / ("minitorch_" + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~TempDir() { std::filesystem::remove_all(dir); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The path of `name` inside the directory (nothing is created).
  std::string path(const std::string& name) const { return (dir / name).string(); }
  /// Writes `content` to `name` inside the directory and returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    std::ofstream(dir / name, std::ios::binary) << content;
    return path(name);
  }
};

/// Writes `lines` lines of Genesis 1:1 to `dir`/corpus.txt and returns its path: a text the CLI tests
/// train on in seconds.
inline std::string write_corpus(const TempDir& dir, int lines = 80) {
  std::string text;
  for (int i = 0; i < lines; ++i) text += "In the beginning God created the heaven and the earth.\n";
  return dir.write("corpus.txt", text);
}

// ---- running the command-line binaries ----
struct CommandResult {
  int exit_code = -1;
  std::string output;
};

/// Runs `cmd` through the shell with stdin from /dev/null; stdout and stderr together.
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* pipe = popen((cmd + " 2>&1 < /dev/null").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
#if defined(__SANITIZE_ADDRESS__)
  // make sanitize: with GCC, UBSan next to ASan reports to stderr only (its log_path is ignored), so a
  // report from a program the test expects to fail would hide behind that expected exit status.
  if (r.output.find(": runtime error: ") != std::string::npos)
    ADD_FAILURE() << "UndefinedBehaviorSanitizer report from `" << cmd << "`:\n" << r.output;
#endif
  return r;
}

/// A binary in build/bin (or MINITORCH_TEST_BIN_DIR), and a file in the source tree.
/// The whole of file `path` ("" if it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
inline std::string bin(const std::string& name) {
  // MINITORCH_TEST_BIN_DIR names another folder of the same programs: make labs-check's stubbed build runs the
  // programs it relinked with the stubs (tools/labs/labs_stubbed.py), as a student tree's test would.
  const char* dir = std::getenv("MINITORCH_TEST_BIN_DIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : MT_BIN_DIR) + "/" + name;
}
inline std::string source(const std::string& rel) { return std::string(MT_SOURCE_DIR) + "/" + rel; }

/// A copy of the shipped config `rel` (configs/*.json) in `dir` whose baby GPT is made tiny (`n_layer` layers, default 1;
/// C 16, T 16): every other setting (the stage, buckets, optimizer, schedule) stays the one a user runs.
/// For the CLI tests that train several times on up to 4 ranks: seconds a run under make sanitize, not
/// half a minute. Throws if the config does not name the baby model as the shipped ones do.
inline std::string tiny_model_copy(const TempDir& dir, const std::string& rel, int n_layer = 1) {
  const std::string baby = R"("model": {"name": "baby"})";
  std::string text = read_text(source(rel));
  const std::size_t at = text.find(baby);
  if (at == std::string::npos) throw std::runtime_error(rel + " does not say " + baby);
  text.replace(at, baby.size(), R"("model": {"name": "baby", "n_layer": )" + std::to_string(n_layer) +
                                    R"(, "n_head": 2, "n_embd": 16, "block_size": 16})");
  return dir.write("tiny_" + std::filesystem::path(rel).filename().string(), text);
}

#ifdef MT_MPIEXEC
/// `mpirun -np N build/bin/PROGRAM ARGS` as a shell command, in a clean environment: once the test
/// process has initialised MPI itself it carries a singleton's OMPI_* / PMIX_* variables, which would
/// derail mpirun. The sanitizer settings pass through (make sanitize: Open MPI's leak suppressions,
/// report files, the preloaded dlclose); 1 thread per rank, root allowed, at most 120 s (then SIGTERM, and
/// SIGKILL 5 s later: an mpirun stuck in its own teardown ignores the first).
inline std::string mpirun_command(const std::string& program, int np, const std::string& args) {
  return std::string("env -i PATH=\"$PATH\" HOME=\"$HOME\" LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH\" ") +
         "LD_PRELOAD=\"$LD_PRELOAD\" ASAN_OPTIONS=\"$ASAN_OPTIONS\" LSAN_OPTIONS=\"$LSAN_OPTIONS\" UBSAN_OPTIONS=\"$UBSAN_OPTIONS\" " +
         "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MINITORCH_NUM_THREADS=1 timeout -k 5 120 " + MT_MPIEXEC +
         " -np " + std::to_string(np) + " --oversubscribe --bind-to none " + bin(program) + " " + args;
}
#endif

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
