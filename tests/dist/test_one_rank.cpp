// Lesson 05 — a world of one rank (the program started without mpirun): every collective works and is
// the identity, and nothing is recorded as sent. This is what the single-rank tools run on.
#include <gtest/gtest.h>

#include <cstdlib>

#include "dist/process_group.h"
#include "test_util.h"

namespace dist = minitorch::dist;
using minitorch::DType;
using minitorch::Tensor;

namespace {
dist::ProcessGroup& one_rank_world() {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  return dist::init(nullptr, nullptr);
}
}  // namespace

TEST(L05_CollectivesOneRank, EveryCollectiveIsTheIdentity) {
  auto& w = one_rank_world();
  EXPECT_EQ(w.size(), 1);
  EXPECT_EQ(w.rank(), 0);
  for (auto a : {dist::Algorithm::mpi, dist::Algorithm::ring}) {
    w.set_algorithm(a);
    w.stats().reset();
    Tensor t = Tensor::from_vector({1.f, 2.f, 3.f}, {3});
    w.all_reduce(t);
    w.all_reduce(t, dist::ReduceOp::avg);
    w.all_reduce_async(t)->wait();
    EXPECT_EQ(t.to_vector(), (std::vector<float>{1.f, 2.f, 3.f}));
    EXPECT_EQ(w.reduce_scatter(t).to_vector(), t.to_vector());
    EXPECT_EQ(w.all_gather(t, 3).to_vector(), t.to_vector());
    Tensor h = t.to(DType::bf16);
    w.all_reduce(h);
    EXPECT_EQ(h.to_vector(), t.to_vector());
    w.broadcast(t, 0);
    w.barrier();
    EXPECT_EQ(t.to_vector(), (std::vector<float>{1.f, 2.f, 3.f}));
    // (N−1)/N = 0: a single rank sends nothing, but every call is logged.
    EXPECT_EQ(w.stats().bytes, 0);
    EXPECT_EQ(w.stats().calls, 7);
    EXPECT_EQ(w.stats().log.front().op, "all_reduce");
  }
  w.set_algorithm(dist::Algorithm::mpi);
  auto self = w.split(0, 0);
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->size(), 1);
  EXPECT_EQ(w.split(-1, 0), nullptr);
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([&] { w.send(Tensor::zeros({1}), 0); }), "cannot send to itself"));
}
