// Lesson 05 — a world of one rank (the program started without mpirun): every collective works and is
// the identity, and nothing is recorded as sent. This is what the single-rank tools run on.
#include <gtest/gtest.h>

#include <cstdlib>

#include "dist/grid.h"
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

TEST(L05_CollectivesOneRank, IntoAsyncAndGridFormsWork) {
  auto& w = one_rank_world();
  for (auto a : {dist::Algorithm::mpi, dist::Algorithm::ring}) {
    w.set_algorithm(a);
    w.stats().reset();
    Tensor t = Tensor::from_vector({1.f, 2.f, 3.f}, {3});
    Tensor out = Tensor::zeros({3});
    w.reduce_scatter_into(out, t, dist::ReduceOp::avg);
    EXPECT_EQ(out.to_vector(), t.to_vector());
    Tensor gathered = Tensor::zeros({3}, DType::bf16);
    w.all_gather_into_async(gathered, t.to(DType::bf16))->wait();
    EXPECT_EQ(gathered.to_vector(), t.to_vector());
    EXPECT_EQ(w.reduce_scatter_async(t).wait().to_vector(), t.to_vector());
    EXPECT_EQ(w.all_gather_async(t, 3).wait().to_vector(), t.to_vector());
    EXPECT_EQ(w.stats().calls, 4);
    EXPECT_EQ(w.stats().bytes, 0);
  }
  w.set_algorithm(dist::Algorithm::mpi);
  // One rank, one stage: both sub-groups are the rank itself; two stages do not fit.
  dist::Grid g = dist::make_grid(w, 1);
  ASSERT_NE(g.data, nullptr);
  ASSERT_NE(g.pipe, nullptr);
  EXPECT_EQ(g.data->size(), 1);
  EXPECT_EQ(g.pipe->size(), 1);
  EXPECT_EQ(g.stage, 0);
  EXPECT_EQ(g.dp_rank, 0);
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([&] { dist::make_grid(w, 2); }), "cannot be split into 2 pipeline stages"));
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([&] { w.isend(Tensor::zeros({1}), 0); }), "isend: rank 0 cannot send to itself"));
}
