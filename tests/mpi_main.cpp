// main() of the multi-rank GoogleTest binaries: every rank runs every test, in the same order (also
// under --gtest_shuffle, which ctest passes: the tests must not depend on each other's order). Rank 0
// prints the usual report; the other ranks print only their failures, each line prefixed with
// "[rank R]", so a failure on one rank is never silent. The job fails if a test failed on any rank.
//
// Tests must call every collective on every rank even when an expectation fails (use EXPECT_*, not
// ASSERT_*, before a collective), or the other ranks wait forever (ctest's timeout ends that).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <ctime>

#include "dist/process_group.h"

namespace {

/// The report of a rank other than 0: failed assertions and failed tests only.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.summary());
    std::fflush(stderr);
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
      std::fflush(stderr);
    }
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto& world = minitorch::dist::init(&argc, &argv);
  // --gtest_shuffle: every rank must run the tests in the same order, so rank 0's seed (given, or
  // drawn from the clock) is everyone's. Printed, so a failing order can be replayed.
  if (GTEST_FLAG_GET(shuffle)) {
    int seed = GTEST_FLAG_GET(random_seed);
    if (seed == 0) seed = static_cast<int>(std::time(nullptr) % 99999) + 1;  // gtest's range: 1..99999
    MPI_Bcast(&seed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    GTEST_FLAG_SET(random_seed, seed);
    if (world.rank() == 0) std::printf("shuffled with --gtest_random_seed=%d on every rank\n", seed);
  }
  if (world.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(world.rank()));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0, any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (world.rank() == 0 && any_failed && !failed) std::fprintf(stderr, "a test failed on another rank (see [rank R] lines)\n");
  minitorch::dist::finalize();
  return any_failed;
}
