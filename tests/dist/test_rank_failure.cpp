// Lesson 05 — a rank that fails takes the whole job down: mpirun exits non-zero within seconds with
// that rank's message, instead of the other ranks waiting forever in their next collective. A rank
// that stops (SIGSTOP) is found by the communication timeout: the waiting ranks give up, name the
// operation and end the job — and while they wait they sleep instead of spinning.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "dist/phase_deadline.h"
#include "dist/process_group.h"
#include "run_ranks.h"

using mt_test::run_ranks;
using mt_test::Timed;
using testing::HasSubstr;

namespace {

Timed run_two_ranks(const std::string& mode) { return run_ranks("mt-rank-throws", 2, mode); }

/// Every "waited W s using C s of CPU" of the output: one per rank that timed out.
std::vector<std::pair<double, double>> waits(const std::string& output) {
  static const std::regex re(R"(waited ([0-9.]+) s using ([0-9.]+) s of CPU)");
  std::vector<std::pair<double, double>> w;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), re); it != std::sregex_iterator(); ++it)
    w.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  return w;
}

/// A stopped rank (the last of 3), a 5 s timeout: the job ends non-zero well within 15 s (the timeout,
/// then at most 2 s of roll call), naming `op` and `who`, and each rank that waited used under half a core
/// meanwhile (it sleeps between tests; spinning would be ~100 %).
void expect_timeout(const std::string& mode, const std::string& op, const std::string& who) {
  auto t = run_ranks("mt-rank-stalls", 3, mode + " 5");
  EXPECT_NE(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr(op));
  EXPECT_THAT(t.result.output, HasSubstr(" timed out after 5 s at step 3: " + who));
  EXPECT_LT(t.seconds, 15.0) << t.result.output;
  const auto w = waits(t.result.output);
  ASSERT_FALSE(w.empty()) << t.result.output;
  for (auto [wall, cpu] : w) {
    std::printf("[ figure ] %s: waited %.2f s, %.3f s CPU (%.1f %%)\n", mode.c_str(), wall, cpu, 100 * cpu / wall);
    EXPECT_GE(wall, 5.0);
    EXPECT_LT(cpu, 0.5 * wall) << t.result.output;
  }
}
}  // namespace

TEST(L05_CollectivesFailure, UncaughtExceptionAbortsTheJob) {
  auto t = run_two_ranks("uncaught");
  EXPECT_NE(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr("rank 1: error: rank 1 fails on purpose"));
  EXPECT_LT(t.seconds, 30.0) << t.result.output;
}

TEST(L05_CollectivesFailure, RunMainTurnsAnExceptionIntoAnAbort) {
  auto t = run_two_ranks("run_main");
  EXPECT_NE(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr("rank 1: error: rank 1 fails on purpose"));
  EXPECT_LT(t.seconds, 30.0) << t.result.output;
}

TEST(L05_CollectivesFailure, RunMainAbortsOnANonZeroReturn) {
  auto t = run_two_ranks("exit_code");
  EXPECT_NE(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr("rank 1 returns 3 on purpose"));
  EXPECT_LT(t.seconds, 30.0) << t.result.output;
}

TEST(L05_CollectivesFailure, CleanRunExitsZero) {
  auto t = run_two_ranks("ok");
  EXPECT_EQ(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr("sum 4"));
  EXPECT_LT(t.seconds, 30.0) << t.result.output;
}

TEST(L05_CollectivesTimeout, StoppedRankEndsTheJobNamingTheAllReduce) {
  expect_timeout("stop", "all_reduce of 809600 elements timed out", "rank 2 did not arrive (this rank waited");
}

TEST(L05_CollectivesTimeout, StoppedRankEndsTheRingAllReduce) {
  expect_timeout("stop_ring", "all_reduce of 809600 elements (ring step: to rank ",
                 "rank 2 did not arrive (this rank waited");
}

TEST(L05_CollectivesTimeout, StoppedPeerEndsARecvNamingThePeer) {
  expect_timeout("recv", "recv of 10 elements from rank 2 timed out", "rank 2 (the peer) did not arrive");
}

TEST(L05_CollectivesTimeout, StoppedRankEndsABarrier) {
  expect_timeout("barrier", "error: barrier timed out", "rank 2 did not arrive (this rank waited");
}

TEST(L05_CollectivesTimeout, KilledRankEndsTheJobWithinSeconds) {
  // Open MPI notices a dead rank by itself, long before any timeout (this one is 100 s).
  auto t = run_ranks("mt-rank-stalls", 3, "kill 100");
  EXPECT_NE(t.result.exit_code, 0) << t.result.output;
  std::printf("[ figure ] SIGKILLed rank: the job ended after %.2f s\n", t.seconds);
  EXPECT_LT(t.seconds, 15.0) << t.result.output;
}

TEST(L05_CollectivesTimeout, NobodyStopsExitsZero) {
  auto t = run_ranks("mt-rank-stalls", 3, "ok 5");
  EXPECT_EQ(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr("sum 9"));
}

// Start-up and shut-down: MPI_Init, MPI_Comm_split and MPI_Finalize wait for every rank with no deadline of
// their own. A watchdog (dist/phase_deadline.h) bounds MPI_Init, a barrier with the comm timeout comes
// before the other two (and a watchdog bounds them too): a rank stopped there ends the job in the timeout,
// with the phase and the rank named, like any collective.
namespace {
Timed expect_phase_timeout(const std::string& args, const std::string& message) {
  auto t = run_ranks("mt-rank-stalls", 3, args);
  EXPECT_NE(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr(message));
  std::printf("[ figure ] %s: the job ended after %.2f s\n", args.c_str(), t.seconds);
  EXPECT_GE(t.seconds, 5.0) << "not before the timeout: " << t.result.output;
  EXPECT_LT(t.seconds, 15.0) << t.result.output;
  return t;
}
}  // namespace

TEST(L05_StartAndExitTimeout, RankStoppedBeforeMpiInitEndsTheJob) {
  // No config exists yet: the limit is --comm-timeout from the command line (else 300 s).
  expect_phase_timeout("stop_init 5 --comm-timeout 5",
                       ": error: MPI_Init timed out after 5 s: a rank of the job did not start, or stopped while starting");
}

TEST(L05_StartAndExitTimeout, RankStoppedBeforeASplitEndsTheJob) {
  expect_phase_timeout("stop_split 5", ": error: the barrier before MPI_Comm_split (making a process group) timed out "
                                       "after 5 s at step 3: rank 2 did not arrive");
}

TEST(L05_StartAndExitTimeout, RankStoppedAfterItsLastWorkEndsTheJob) {
  expect_phase_timeout("stop_exit 5", ": error: the barrier before MPI_Finalize (the end of the run) timed out after 5 s "
                                      "at step 3: rank 2 did not arrive");
}

TEST(L05_StartAndExitTimeout, RankStoppedAfterMpiFinalizeIsKilledByTheExitWatchers) {
  // Past the last barrier no code of the stopped rank runs, and mpirun would wait for it forever: the
  // watchers the other ranks leave behind (dist/exit_watch.h) end it.
  auto t = expect_phase_timeout("stop_late 5", ": error: rank 2 (pid ");
  EXPECT_THAT(t.result.output, HasSubstr(") had not exited 5 s after the end of the run: it is stopped or stuck after "
                                         "its last barrier; killing it so that mpirun ends the job"));
}

TEST(L05_StartAndExitTimeout, CommTimeoutFromTheCommandLineBoundsMpiInit) {
  // What dist::init reads before any config: a number > 0 after --comm-timeout, else the default.
  namespace d = minitorch::dist;
  auto limit = [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return d::comm_timeout_from_args(static_cast<int>(argv.size()), argv.data());
  };
  EXPECT_EQ(limit({"prog", "--comm-timeout", "7.5"}), 7.5);
  EXPECT_EQ(limit({"prog", "--config", "c.json", "--comm-timeout=3"}), 3.0);
  EXPECT_EQ(limit({"prog"}), d::kDefaultTimeoutSeconds);
  EXPECT_EQ(limit({"prog", "--comm-timeout", "nan"}), d::kDefaultTimeoutSeconds);
  EXPECT_EQ(limit({"prog", "--comm-timeout", "-2"}), d::kDefaultTimeoutSeconds);
  EXPECT_EQ(limit({"prog", "--comm-timeout"}), d::kDefaultTimeoutSeconds);
}
