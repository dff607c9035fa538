// Lesson 05 — how a rank waits: the wait loop of dist/comm_wait.h finishes what arrives, gives up at
// its deadline, and sleeps (rather than spins) while nothing arrives. One rank, messages to itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <stdexcept>

#include "dist/comm_wait.h"
#include "dist/process_group.h"

namespace dist = minitorch::dist;
using testing::HasSubstr;

namespace {
void init() { dist::init(nullptr, nullptr); }
}  // namespace

TEST(L05_CommWait, FinishesAMessageThatArrives) {
  init();
  int out = 42, in = 0;
  MPI_Request r[2];
  MPI_Irecv(&in, 1, MPI_INT, 0, 901, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(&out, 1, MPI_INT, 0, 901, MPI_COMM_WORLD, &r[1]);
  const auto w = dist::detail::wait_for(r, 2, MPI_STATUSES_IGNORE, 5.0);
  EXPECT_TRUE(w.done);
  EXPECT_EQ(in, 42);
  EXPECT_LT(w.wall_s, 5.0);
}

TEST(L05_CommWait, GivesUpAtTheDeadlineWithoutSpinning) {
  init();
  int in = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Irecv(&in, 1, MPI_INT, 0, 902, MPI_COMM_WORLD, &r);  // nobody sends it
  const auto w = dist::detail::wait_for(&r, 1, MPI_STATUSES_IGNORE, 0.5);
  EXPECT_FALSE(w.done);
  EXPECT_GE(w.wall_s, 0.5);
  EXPECT_LT(w.wall_s, 2.0);
  std::printf("[ figure ] 0.5 s wait: %.3f s CPU (%.1f %%)\n", w.cpu_s, 100 * w.cpu_s / w.wall_s);
  EXPECT_LT(w.cpu_s, 0.5 * w.wall_s);  // spinning would be ~100 %
  MPI_Cancel(&r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
}

TEST(L05_CommWait, MessageNamesTheOperationTheStepAndWhoDidNotArrive) {
  dist::detail::WaitContext c{"all_reduce of 809600 elements", -1, 4, 5, 12};
  const std::string m = dist::detail::timeout_message(c, {false, 5.01, 0.02});
  EXPECT_THAT(m, HasSubstr("all_reduce of 809600 elements timed out after 5 s at step 12: one or more ranks of "
                           "the group (4 ranks) did not arrive (this rank waited 5.0 s using 0.020 s of CPU"));
  c = {"recv of 10 elements from rank 3", 3, 4, 300, -1};
  EXPECT_THAT(dist::detail::timeout_message(c, {}),
              HasSubstr("recv of 10 elements from rank 3 timed out after 300 s: rank 3 (the peer) did not arrive"));
}

TEST(L05_CommWait, ACollectiveNamesTheRanksItsRollCallFound) {
  // dist/roll_call.h: who never answered (or is still in an earlier operation), and who came late.
  dist::detail::WaitContext c{"all_reduce of 809600 elements", -1, 4, 5, 12};
  dist::detail::Absent a;
  a.asked = true;
  a.missing = {1};
  EXPECT_THAT(dist::detail::timeout_message(c, {false, 5.0, 0.01}, a),
              HasSubstr("timed out after 5 s at step 12: rank 1 did not arrive (this rank waited"));
  a.missing = {1, 2, 3};
  a.late = {0};
  EXPECT_EQ(dist::detail::describe(a), "ranks 1, 2 and 3 did not arrive; rank 0 did not arrive in time (came only "
                                       "after this rank gave up: stopped, or too slow)");
  a.missing.clear();
  a.late.clear();  // everyone answered that it is in it: the transfer itself is what is stuck
  EXPECT_THAT(dist::detail::timeout_message(c, {}, a),
              HasSubstr(": every rank of the group (4 ranks) answered that it is in it, yet it did not complete"));
}

TEST(L05_CommWait, TimeoutMustBePositiveAndPassesToSubGroups) {
  auto& world = dist::init(nullptr, nullptr);
  const double before = world.timeout();
  EXPECT_THROW(world.set_timeout(0), std::invalid_argument);
  EXPECT_THROW(world.set_timeout(-3), std::invalid_argument);
  EXPECT_EQ(world.timeout(), before);
  world.set_timeout(12.5);
  world.set_current_step(7);
  auto sub = world.split(0, 0);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->timeout(), 12.5);
  EXPECT_EQ(sub->current_step(), 7);
  world.set_timeout(before);
  world.set_current_step(-1);
}
