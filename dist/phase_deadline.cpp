#include "dist/phase_deadline.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dist/deadline.h"
#include "dist/exit_watch.h"
#include "dist/process_group.h"

namespace minitorch::dist {

PhaseDeadline::PhaseDeadline(std::string phase, double seconds, int rank, std::string who) {
  watchdog_ = std::thread([this, phase = std::move(phase), seconds, rank, who = std::move(who)] {
    std::unique_lock<std::mutex> lock(mu_);
    const auto until = deadline_after(seconds);
    auto finished = [this] { return done_; };
    if (until == Clock::time_point::max()) return cv_.wait(lock, finished);  // no limit
    if (cv_.wait_until(lock, until, finished)) return;
    // One write: under mpirun the ranks' stderr lines interleave.
    char line[1024];
    const std::string rank_text = rank >= 0 ? "rank " + std::to_string(rank) + ": " : std::string();
    std::snprintf(line, sizeof line, "%serror: %s timed out after %g s: %s\n", rank_text.c_str(), phase.c_str(),
                  seconds, who.c_str());
    std::fflush(stdout);
    std::fwrite(line, 1, std::strlen(line), stderr);
    std::fflush(stderr);
    kill_stopped_job_peers(rank);  // a stopped rank on this machine: mpirun's own kill may never land
    std::_Exit(1);
  });
}

PhaseDeadline::~PhaseDeadline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  watchdog_.join();
}

double comm_timeout_from_args(int argc, char** argv) {
  const std::string flag = "--comm-timeout";
  for (int i = 1; i < argc && argv && argv[i]; ++i) {
    const char* value = nullptr;
    if (argv[i] == flag && i + 1 < argc) value = argv[i + 1];
    else if (std::strncmp(argv[i], "--comm-timeout=", flag.size() + 1) == 0) value = argv[i] + flag.size() + 1;
    if (!value) continue;
    char* end = nullptr;
    const double s = std::strtod(value, &end);
    if (end != value && *end == '\0' && std::isfinite(s) && s > 0) return s;  // else the tool's parser says why
  }
  return kDefaultTimeoutSeconds;
}

}  // namespace minitorch::dist
