// Lesson 05 — who did not arrive. A collective that times out names the ranks missing from it, found by
// the group's roll call (dist/roll_call.h), not "one or more ranks"; and a rank that was stopped, once it
// runs again, says the job had already failed instead of blaming the ranks that waited for it.
// Three ranks; rank 1 (not the last, not the first) stalls before an all-reduce, the timeout is 3 s.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "run_ranks.h"

using mt_test::run_ranks;
using testing::HasSubstr;
using testing::Not;

TEST(L05_RankNamed, AStoppedRankIsNamedByEveryRankThatWaited) {
  const auto t = run_ranks("mt-rank-stalls", 3, "stall 3");
  const std::string& out = t.result.output;
  EXPECT_NE(t.result.exit_code, 0) << out;
  const std::string named = " error: all_reduce of 809600 elements timed out after 3 s at step 3: rank 1 did not arrive (";
  EXPECT_THAT(out, HasSubstr("rank 0:" + named));
  EXPECT_THAT(out, HasSubstr("rank 2:" + named));
  EXPECT_THAT(out, Not(HasSubstr("one or more ranks")));
  std::printf("[ figure ] rank 1 stopped, 3 s timeout: the job ended after %.2f s\n", t.seconds);
  EXPECT_LT(t.seconds, 12.0) << "the timeout, at most 2 s of roll call, then the abort: " << out;
}

TEST(L05_RankNamed, AStoppedRankThatWakesSaysTheJobHadFailedInsteadOfBlamingTheOthers) {
  // Rank 1 runs again 4 s after it stopped: after ranks 0 and 2 gave up (3 s), within their roll call.
  const auto t = run_ranks("mt-rank-stalls", 3, "stall 3 4");
  const std::string& out = t.result.output;
  EXPECT_NE(t.result.exit_code, 0) << out;
  EXPECT_THAT(out, HasSubstr("rank 1 runs again"));
  EXPECT_THAT(out, HasSubstr("rank 1: error: the job had already failed: rank 0 gave up waiting after 3.0 s, rank 2 "
                             "after 3.0 s, and this rank came late: it was stopped, or too slow"));
  EXPECT_THAT(out, Not(HasSubstr("rank 1: error: all_reduce")));  // it blames nobody
  const std::string late = ": rank 1 did not arrive in time (came only after this rank gave up: stopped, or too slow)";
  EXPECT_THAT(out, HasSubstr("rank 0: error: all_reduce of 809600 elements timed out after 3 s at step 3" + late));
  EXPECT_THAT(out, HasSubstr("rank 2: error: all_reduce of 809600 elements timed out after 3 s at step 3" + late));
  EXPECT_LT(t.seconds, 12.0) << out;
}

TEST(L05_RankNamed, ARankThatWakesBeforeTheTimeoutJustCatchesUp) {
  // Stopped for 1 s of a 3 s timeout: nobody gives up, nothing is reported, the job ends well.
  const auto t = run_ranks("mt-rank-stalls", 3, "stall 3 1");
  EXPECT_EQ(t.result.exit_code, 0) << t.result.output;
  EXPECT_THAT(t.result.output, HasSubstr("sum 9"));
  EXPECT_THAT(t.result.output, Not(HasSubstr("error")));
}
