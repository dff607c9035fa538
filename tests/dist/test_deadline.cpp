// Lesson 05 — deadlines that cannot overflow. A timeout becomes a moment on the clock in one place
// (dist/deadline.h): `now + 1e10 s` does not fit in steady_clock's 64-bit nanoseconds, and the wrapped
// moment lay in the past, so `--comm-timeout 1e10` timed out MPI_Init at once and `comm.timeout_s: 1e12`
// timed out MPI_Finalize. Now a timeout of 1e9 s or more is no limit, at start-up, in every wait, and at exit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

#include "dist/comm_wait.h"
#include "dist/deadline.h"
#include "dist/phase_deadline.h"
#include "dist/process_group.h"
#include "run_ranks.h"

namespace dist = minitorch::dist;
using dist::Clock;
using testing::HasSubstr;
using namespace std::chrono_literals;

TEST(L05_Deadline, AFiniteTimeoutIsThatMuchLater) {
  const Clock::time_point from = Clock::now();
  EXPECT_EQ(dist::deadline_after(2.5, from), from + 2500ms);
  EXPECT_EQ(dist::deadline_after(0.9e9, from) - from, std::chrono::duration_cast<Clock::duration>(0.9e9 * 1s));
  EXPECT_FALSE(dist::no_limit(0.9e9));
}

TEST(L05_Deadline, AHugeTimeoutIsNoLimitInsteadOfWrappingIntoThePast) {
  const Clock::time_point from = Clock::now(), never = Clock::time_point::max();
  for (double s : {dist::kNoLimitSeconds, 1e10, 1e12, 1e300, std::numeric_limits<double>::infinity()}) {
    EXPECT_TRUE(dist::no_limit(s)) << s;
    EXPECT_EQ(dist::deadline_after(s, from), never) << s;
  }
  // A moment near the clock's end saturates too, rather than wrap.
  EXPECT_EQ(dist::deadline_after(1e8, never - 1h), never);
}

TEST(L05_Deadline, NothingLeftIsDueAtOnce) {
  const Clock::time_point from = Clock::now();
  for (double s : {0.0, -1.0, std::nan("")}) EXPECT_EQ(dist::deadline_after(s, from), from) << s;
  EXPECT_FALSE(dist::no_limit(std::nan("")));
}

TEST(L05_Deadline, AWatchdogWithAHugeLimitDoesNotFire) {
  // Before the fix it fired at once: "MPI_Init timed out after 1e+10 s", and ended this process.
  for (double s : {1e10, 1e12}) {
    dist::PhaseDeadline watch("a phase", s, 0, "nobody");
    std::this_thread::sleep_for(100ms);
  }  // still here: it stood down
  SUCCEED();
}

namespace {
struct StopWaiting : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace

TEST(L05_Deadline, AWaitWithAHugeLimitKeepsWaiting) {
  dist::init(nullptr, nullptr);
  int in = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Irecv(&in, 1, MPI_INT, 0, 903, MPI_COMM_WORLD, &r);  // nobody sends it
  const auto t0 = Clock::now();
  auto leave_after_a_while = [&](bool) {
    if (Clock::now() - t0 > 300ms) throw StopWaiting("still waiting");
  };
  EXPECT_THROW(dist::detail::wait_for(&r, 1, MPI_STATUSES_IGNORE, 1e12, leave_after_a_while), StopWaiting);
  MPI_Cancel(&r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
}

TEST(L05_Deadline, ARankThatWasStoppedCountsItsTimeoutFromWhenItRunsAgain) {
  // The time a rank did not run (SIGSTOP) is not the others' delay: its deadline starts again when it
  // wakes. Here the "stop" is 1.2 s spent inside the first call between two tests, with a 0.5 s timeout.
  dist::init(nullptr, nullptr);
  int in = 0, calls = 0, woke = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Irecv(&in, 1, MPI_INT, 0, 904, MPI_COMM_WORLD, &r);
  auto stop_once = [&](bool w) {
    woke += w ? 1 : 0;
    if (calls++ == 0) std::this_thread::sleep_for(std::chrono::duration<double>(dist::detail::kStoppedSeconds + 0.2));
  };
  const auto w = dist::detail::wait_for(&r, 1, MPI_STATUSES_IGNORE, 0.5, stop_once);
  EXPECT_FALSE(w.done);
  EXPECT_EQ(woke, 1);
  EXPECT_GE(w.wall_s, dist::detail::kStoppedSeconds + 0.2 + 0.5);  // not given up on waking
  MPI_Cancel(&r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
}

// Both ends of a real run: 2 ranks train a step and exit 0 with --comm-timeout 1e10 (MPI_Init's limit,
// then every wait's) and with comm.timeout_s 1e12 (the waits', the barrier and MPI_Finalize at the end,
// and the exit watchers').
namespace {
mt_test::Timed train_two_ranks(const std::string& comm, const std::string& flag) {
  mt_test::TempDir dir;
  const std::string config = dir.write("c.json", R"({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}}, )" + comm + R"(
    "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16},
    "training": {"steps": 1, "eval_interval": 0, "log_interval": 1, "seed": 7}})");
  return mt_test::run_ranks("minitorch-train", 2,
                            "--config " + config + " --data " + mt_test::write_corpus(dir) + " " + flag);
}
}  // namespace

TEST(L05_Deadline, TwoRanksTrainAndExitWithAHugeTimeoutFromTheCommandLine) {
  const auto t = train_two_ranks("", "--comm-timeout 1e10");
  EXPECT_EQ(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr("step     1/1"));
  EXPECT_THAT(t.result.output, testing::Not(HasSubstr("timed out")));
}

TEST(L05_Deadline, TwoRanksTrainAndExitWithAHugeTimeoutFromTheConfig) {
  const auto t = train_two_ranks(R"("comm": {"timeout_s": 1e12},)", "");
  EXPECT_EQ(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr("step     1/1"));
  EXPECT_THAT(t.result.output, testing::Not(HasSubstr("timed out")));
}
