// An aborting rank's backstop (dist/exit_watch.h, kill_stopped_job_peers): the processes of its own Open MPI job
// on this machine that are stopped get SIGKILL, named on stderr; a stopped process of another job, one of this job
// that runs, and everything outside mpirun are left alone.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "dist/exit_watch.h"

extern char** environ;

namespace {

/// `sleep 30` with OMPI_MCA_ess_base_jobid=`job` and OMPI_COMM_WORLD_RANK=`rank` as its whole environment.
pid_t spawn_sleeper(const std::string& job, int rank) {
  std::string a = "OMPI_MCA_ess_base_jobid=" + job, b = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  char* envp[] = {a.data(), b.data(), nullptr};
  char prog[] = "/bin/sleep", arg[] = "30";
  char* argv[] = {prog, arg, nullptr};
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, "/bin/sleep", nullptr, nullptr, argv, envp), 0);
  return pid;
}

/// Waits for `pid` to show state `want` in /proc (T: stopped), up to 5 s.
bool reaches_state(pid_t pid, char want) {
  for (int i = 0; i < 500; ++i) {
    FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    char buf[512] = {};
    if (f) {
      (void)!std::fgets(buf, sizeof buf, f);
      std::fclose(f);
    }
    const char* paren = std::strrchr(buf, ')');
    if (paren && paren[1] && paren[2] == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// How `pid` ended within `seconds`: the signal that killed it, 0 if it exited, -1 if it still runs then (it is
/// then killed and reaped). A signal is delivered asynchronously: under load the death shows a moment later.
int end_of(pid_t pid, double seconds) {
  int status = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

}  // namespace

TEST(L05_StoppedPeers, AnAbortingRankKillsOnlyTheStoppedProcessesOfItsOwnJob) {
  const std::string job = "minitorch-test-" + std::to_string(getpid());
  const pid_t stopped = spawn_sleeper(job, 2), running = spawn_sleeper(job, 1), other = spawn_sleeper(job + "-other", 2);
  kill(stopped, SIGSTOP);
  kill(other, SIGSTOP);
  ASSERT_TRUE(reaches_state(stopped, 'T'));
  ASSERT_TRUE(reaches_state(other, 'T'));

  const char* before = std::getenv("OMPI_MCA_ess_base_jobid");
  const std::string saved = before ? before : "";
  unsetenv("OMPI_MCA_ess_base_jobid");
  EXPECT_EQ(minitorch::dist::kill_stopped_job_peers(0), 0) << "outside mpirun (no job id) nothing is touched";
  setenv("OMPI_MCA_ess_base_jobid", job.c_str(), 1);
  testing::internal::CaptureStderr();
  const int killed = minitorch::dist::kill_stopped_job_peers(0);
  const std::string said = testing::internal::GetCapturedStderr();
  if (before) setenv("OMPI_MCA_ess_base_jobid", saved.c_str(), 1);
  else unsetenv("OMPI_MCA_ess_base_jobid");

  EXPECT_EQ(killed, 1);
  EXPECT_NE(said.find("rank 0: error: rank 2 (pid " + std::to_string(stopped) +
                      ") of this job is stopped; killing it so that mpirun ends the job"),
            std::string::npos)
      << said;
  EXPECT_EQ(end_of(stopped, 10), SIGKILL) << "the stopped rank of this job";
  // (by now the SIGKILL has landed: the other two would have been hit at the same moment)
  EXPECT_EQ(end_of(running, 0.2), -1) << "a running rank ends with the job, not here";
  EXPECT_EQ(end_of(other, 0.2), -1) << "another job's stopped process is not ours";
}
