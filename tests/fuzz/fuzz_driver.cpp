// The campaign loop, the hang watchdog and the crash hooks of fuzz_driver.h. Each input is written to
// <target>-running.bin before it runs, so whatever ends the process — a signal, an ASan report, a UBSan
// report (which exits without calling anyone back), ctest's timeout — leaves it on disk. The hooks
// that do get called run in a dying process, so they only rename that file to <target>-<index>.bin
// and write a line to stderr.
#include "fuzz/fuzz_driver.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include "fuzz/fuzz_mutator.h"

namespace mt_fuzz {

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

/// The input being run, for the watchdog and the crash hooks.
struct Current {
  std::atomic<bool> running{false};
  std::atomic<std::int64_t> started_ns{0};
  char running_path[4096] = {0};  // holds the input while it runs
  char path[4096] = {0};          // its name once it is a finding
};
Current g_current;

void say(const char* s) {
  const ssize_t ignored = ::write(2, s, std::strlen(s));
  (void)ignored;
}

/// Keeps the running input under its finding's name (async-signal-safe).
void save_current(const char* why) {
  if (!g_current.running.load()) return;
  std::rename(g_current.running_path, g_current.path);
  say("\nfuzz driver: ");
  say(why);
  say("; the input is saved in ");
  say(g_current.path);
  say(" (replay: MT_FUZZ_REPLAY=<that file> test-fuzz --gtest_filter=L03_Fuzz.<Target>)\n");
}

#if defined(__SANITIZE_ADDRESS__)
void on_sanitizer_death() { save_current("a sanitizer report ended the process"); }
#else
void on_fatal_signal(int sig) {
  save_current("a fatal signal ended the process");
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
#endif

void install_crash_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_set_death_callback(on_sanitizer_death);
#else
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
      struct sigaction sa {};
      sa.sa_handler = on_fatal_signal;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, nullptr);
    }
#endif
  });
}

/// Ends the process when one input runs longer than the hang limit (an in-process parser cannot be
/// interrupted; the input is saved first).
class Watchdog {
 public:
  Watchdog(double limit_s, const char* target) {
    thread_ = std::thread([this, limit_s, target] {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return stop_; })) {
        if (!g_current.running.load()) continue;
        const double s = static_cast<double>(now_ns() - g_current.started_ns.load()) * 1e-9;
        if (s > limit_s) {
          char why[256];
          std::snprintf(why, sizeof why, "HANG in target %s: an input still runs after %.1f s", target, s);
          save_current(why);
          std::_Exit(3);
        }
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
};

/// <target>-running.bin, rewritten in place for every input. One descriptor for the whole campaign:
/// truncating a file to 0 and closing it after each rewrite makes ext4 flush it to disk (its
/// replace-by-truncate heuristic), which cost 3 ms per input.
class RunningFile {
 public:
  explicit RunningFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("fuzz driver: cannot create " + path_);
  }
  ~RunningFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  RunningFile(const RunningFile&) = delete;
  RunningFile& operator=(const RunningFile&) = delete;
  void write(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
      if (n <= 0) throw std::runtime_error("fuzz driver: cannot write " + path_);
      done += static_cast<std::size_t>(n);
    }
    if (::ftruncate(fd_, static_cast<off_t>(bytes.size())) != 0)
      throw std::runtime_error("fuzz driver: cannot write " + path_);
  }

 private:
  std::string path_;
  int fd_ = -1;
};

std::string input_path(const std::string& dir, const char* target, std::size_t index) {
  return dir + "/" + target + "-" + std::to_string(index) + ".bin";
}

/// Runs one input under the contract: "" if it held, else what broke.
std::string run_one(const Target& t, const std::string& input, Outcome& out) {
  try {
    out = t.run(input);
    return "";
  } catch (const FuzzFinding& e) {
    return e.what();
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (what.size() > 500) what = what.substr(0, 500) + "...";
    return "an exception of type " + type_name(e) + " escaped (the contract: " + t.contract + "): " + what;
  } catch (...) {
    return "an exception that is not a std::exception escaped";
  }
}

}  // namespace

std::string escape_bytes(const std::string& bytes, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (bytes.size() > max) out += "... (" + std::to_string(bytes.size()) + " bytes in all)";
  return out;
}

std::string CampaignReport::summary(const std::string& name) const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "fuzz %s: %zu inputs (%zu seeds + %zu mutated) in %.2f s: %zu accepted, %zu rejected, %zu findings; "
                "slowest input #%zu %.3f s",
                name.c_str(), seeds + mutated, seeds, mutated, seconds, accepted, rejected, findings.size(),
                slowest_index, slowest_s);
  return buf;
}

CampaignReport run_campaign(const Target& t, const CampaignOptions& o) {
  namespace fs = std::filesystem;
  fs::create_directories(o.findings_dir);
  install_crash_hooks();
  const std::vector<std::string> seeds = t.seeds();
  const std::string running_path = o.findings_dir + "/" + t.name + "-running.bin";
  std::snprintf(g_current.running_path, sizeof g_current.running_path, "%s", running_path.c_str());
  CampaignReport rep;
  rep.seeds = seeds.size();
  rep.mutated = o.mutated_inputs;
  const auto campaign_start = Clock::now();
  RunningFile running(running_path);
  Watchdog watchdog(o.hang_limit_s, t.name);
  for (std::size_t i = 0; i < rep.seeds + rep.mutated; ++i) {
    const std::string input = i < rep.seeds ? seeds[i] : mutate(seeds, t.kind, o.seed, i);
    const std::string path = input_path(o.findings_dir, t.name, i);
    std::snprintf(g_current.path, sizeof g_current.path, "%s", path.c_str());
    running.write(input);
    g_current.started_ns = now_ns();
    g_current.running = true;
    Outcome out;
    std::string broke = run_one(t, input, out);
    g_current.running = false;
    const double s = static_cast<double>(now_ns() - g_current.started_ns.load()) * 1e-9;
    if (s > rep.slowest_s) rep.slowest_s = s, rep.slowest_index = i;
    if (broke.empty() && i < rep.seeds && !out.accepted) broke = "the seed itself was rejected: " + out.error;
    if (broke.empty() && s > o.input_limit_s)
      broke = "took " + std::to_string(s) + " s, more than the " + std::to_string(o.input_limit_s) + " s per input";
    if (!broke.empty()) {
      std::ofstream(path, std::ios::binary) << input;
      rep.findings.push_back({i, broke, path});
    } else {
      ++(out.accepted ? rep.accepted : rep.rejected);
    }
  }
  rep.seconds = std::chrono::duration<double>(Clock::now() - campaign_start).count();
  return rep;
}

std::string replay(const Target& t, const std::string& file, Outcome* outcome, double input_limit_s) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "cannot read '" + file + "'";
  std::ostringstream s;
  s << in.rdbuf();
  const std::string input = std::move(s).str();
  Outcome out;
  const auto start = Clock::now();
  std::string broke = run_one(t, input, out);
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  if (broke.empty() && secs > input_limit_s)
    broke = "took " + std::to_string(secs) + " s, more than the " + std::to_string(input_limit_s) + " s per input";
  std::printf("replay of %s (%zu bytes) through %s: %s in %.3f s\n", file.c_str(), input.size(), t.name,
              !broke.empty() ? "FINDING" : out.accepted ? "accepted" : "rejected", secs);
  if (outcome) *outcome = out;
  return broke;
}

}  // namespace mt_fuzz
