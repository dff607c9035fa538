// Lesson 05 — a rank that fails takes the whole job down: mpirun exits non-zero within seconds with
// that rank's message, instead of the other ranks waiting forever in their next collective.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "test_util.h"

using testing::HasSubstr;

namespace {
struct Timed {
  mt_test::CommandResult result;
  double seconds = 0;
};

Timed run_two_ranks(const std::string& mode) {
  // A clean environment: once this process has initialised MPI itself (the one-rank tests run in the
  // same binary), it carries a singleton's OMPI_* / PMIX_* variables, which would derail mpirun.
  const std::string cmd = std::string("env -i PATH=\"$PATH\" HOME=\"$HOME\" LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH\" ") +
                          "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MINITORCH_NUM_THREADS=1 " +
                          "timeout 120 " + MT_MPIEXEC + " -np 2 --oversubscribe --bind-to none " +
                          mt_test::bin("mt-rank-throws") + " " + mode;
  const auto t0 = std::chrono::steady_clock::now();
  Timed t;
  t.result = mt_test::run_command(cmd);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
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
