#include "dist/exit_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "dist/deadline.h"

namespace minitorch::dist {

namespace {
// Whether process `pid` still runs: its /proc entry exists and it is no zombie (exited, not yet reaped by
// mpirun). Only system calls: the watcher is a forked copy of a process that had threads.
bool still_there(long pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) return false;
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');  // "pid (comm) S ...": the state follows the name
  if (!close_paren || close_paren[1] == '\0' || close_paren[2] == '\0') return false;
  const char state = close_paren[2];
  return state != 'Z' && state != 'X';
}

[[noreturn]] void watch(const std::vector<PeerProcess>& peers, double seconds, int my_rank) {
  const Clock::time_point until = deadline_after(seconds);  // steady_clock: clock_gettime, safe after fork
  const timespec pause{0, 10 * 1000 * 1000};  // 10 ms
  for (;;) {
    bool waiting = false;
    for (const PeerProcess& p : peers) waiting = waiting || still_there(p.pid);
    if (!waiting) ::_exit(0);
    if (Clock::now() >= until) break;
    ::nanosleep(&pause, nullptr);
  }
  for (const PeerProcess& p : peers) {
    if (!still_there(p.pid)) continue;
    char line[512];
    const int n = std::snprintf(line, sizeof line,
                                "rank %d: error: rank %d (pid %ld) had not exited %g s after the end of the run: it "
                                "is stopped or stuck after its last barrier; killing it so that mpirun ends the job\n",
                                my_rank, p.rank, p.pid, seconds);
    if (n > 0) (void)!::write(STDERR_FILENO, line, static_cast<std::size_t>(n) < sizeof line ? n : sizeof line - 1);
    ::kill(static_cast<pid_t>(p.pid), SIGKILL);
  }
  ::_exit(1);
}
}  // namespace

namespace {

/// Process `pid`'s state letter (R, S, T, Z, ...), or '\0' if it is gone.
char process_state(long pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  std::ifstream in(path);
  std::string stat;
  std::getline(in, stat);
  const std::size_t paren = stat.rfind(')');  // "pid (comm) S ...": the state follows the name
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '\0';
}

/// The value of `name` in process `pid`'s environment ("" if unreadable or unset).
std::string environment_value(long pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string entry;
  while (std::getline(in, entry, '\0'))
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=')
      return entry.substr(name.size() + 1);
  return "";
}

}  // namespace

int kill_stopped_job_peers(int my_rank) {
  const char* job = std::getenv("OMPI_MCA_ess_base_jobid");
  if (!job || !*job) return 0;  // not started by mpirun: no job to speak of
  if (my_rank < 0) {  // before MPI_Init has returned: the rank mpirun gave this process
    const char* mine = std::getenv("OMPI_COMM_WORLD_RANK");
    my_rank = mine ? std::atoi(mine) : -1;
  }
  std::error_code ec;
  int killed = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::stol(name);
    if (pid == static_cast<long>(::getpid())) continue;
    const char state = process_state(pid);
    if (state != 'T' && state != 't') continue;  // only the stopped ones: the others end with the job
    if (environment_value(pid, "OMPI_MCA_ess_base_jobid") != job) continue;
    const std::string rank = environment_value(pid, "OMPI_COMM_WORLD_RANK");
    std::fprintf(stderr, "rank %d: error: rank %s (pid %ld) of this job is stopped; killing it so that mpirun ends the job\n",
                 my_rank, rank.empty() ? "?" : rank.c_str(), pid);
    std::fflush(stderr);
    if (::kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++killed;
  }
  return killed;
}

std::string process_label() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + " " + std::to_string(static_cast<long>(::getpid()));
}

std::vector<PeerProcess> peers_on_this_host(const std::vector<std::string>& labels, int my_rank) {
  std::vector<PeerProcess> peers;
  if (my_rank < 0 || static_cast<std::size_t>(my_rank) >= labels.size()) return peers;
  std::istringstream mine(labels[static_cast<std::size_t>(my_rank)]);
  std::string my_host;
  mine >> my_host;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    if (static_cast<int>(r) == my_rank) continue;
    std::istringstream in(labels[r]);
    std::string host;
    long pid = 0;
    if (in >> host >> pid && host == my_host && pid > 0) peers.push_back({static_cast<int>(r), pid});
  }
  return peers;
}

void leave_exit_watcher(const std::vector<PeerProcess>& peers, double seconds, int my_rank) {
  if (peers.empty()) return;
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return;  // no watcher: the run itself is done
  if (child > 0) {        // this rank: reap the short-lived child and go on exiting
    int status = 0;
    ::waitpid(child, &status, 0);
    return;
  }
  // The child: a new session, then a grandchild that nobody waits for (init reaps it), so the rank's own
  // exit is not delayed. Its stdout goes nowhere; stderr stays for the one message.
  ::setsid();
  if (::fork() != 0) ::_exit(0);
  const int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(null_fd, STDOUT_FILENO);
  }
  watch(peers, seconds, my_rank);
}

}  // namespace minitorch::dist
