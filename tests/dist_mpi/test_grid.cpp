// Lesson 05 — a data × pipeline grid of ranks (dist/grid.h) on 2 and 4 ranks: sizes, membership
// (world rank = stage · dp_size + dp_rank), and traffic staying inside each sub-group.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dist/grid.h"
#include "dist_mpi/collective_util.h"
#include "test_util.h"

namespace dist = minitorch::dist;
using minitorch::Tensor;
using namespace mt_mpi;

namespace {
/// The world ranks of `g`'s members, in g's rank order (every member calls this together).
std::vector<std::int32_t> members(dist::ProcessGroup& g) {
  dist::NoRecordScope quiet(g);
  return g.all_gather(Tensor::from_ints({dist::world().rank()}, {1}), g.size()).to_int_vector();
}
}  // namespace

TEST(L05_Grid, EveryDivisorOfTheWorldGivesTheRightGroups) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  for (int stages = 1; stages <= n; ++stages) {
    if (n % stages != 0) continue;
    const dist::Grid g = dist::make_grid(w, stages);
    const int dp = n / stages;
    EXPECT_EQ(g.stages, stages);
    EXPECT_EQ(g.dp_size, dp);
    EXPECT_EQ(g.stage, r / dp);
    EXPECT_EQ(g.dp_rank, r % dp);
    EXPECT_EQ(g.world_rank(g.stage, g.dp_rank), r);
    EXPECT_NE(g.data, nullptr);
    EXPECT_NE(g.pipe, nullptr);
    if (!g.data || !g.pipe) continue;  // every rank got both, or every rank failed alike
    EXPECT_EQ(g.data->size(), dp);
    EXPECT_EQ(g.data->rank(), g.dp_rank);
    EXPECT_EQ(g.pipe->size(), stages);
    EXPECT_EQ(g.pipe->rank(), g.stage);
    // Data group: the consecutive world ranks of this stage; pipeline: this dp_rank at every stage.
    std::vector<std::int32_t> data_expect, pipe_expect;
    for (int q = 0; q < dp; ++q) data_expect.push_back(g.stage * dp + q);
    for (int s = 0; s < stages; ++s) pipe_expect.push_back(s * dp + g.dp_rank);
    EXPECT_EQ(members(*g.data), data_expect) << stages << " stages";
    EXPECT_EQ(members(*g.pipe), pipe_expect) << stages << " stages";
    // An all-reduce in the data group sums its members only, and counts in its own stats.
    Tensor t = Tensor::from_vector({static_cast<float>(r + 1)}, {1});
    g.data->all_reduce(t);
    float expect = 0;
    for (int q : data_expect) expect += static_cast<float>(q + 1);
    EXPECT_EQ(t.item(), expect);
    EXPECT_EQ(g.data->stats().calls, 1);
    // Activations forward along the pipeline: every stage sends to the next before receiving.
    if (stages > 1) {
      Tensor act = Tensor::full({1000}, static_cast<float>(r)), got = Tensor::zeros({1000});
      g.pipe->send(act, (g.stage + 1) % stages, 1);
      g.pipe->recv(got, (g.stage + stages - 1) % stages, 1);
      EXPECT_EQ(got.at({0}), static_cast<float>(g.world_rank((g.stage + stages - 1) % stages, g.dp_rank)));
    }
  }
}

TEST(L05_Grid, StagesThatDoNotDivideTheWorldAreRejected) {
  auto& w = dist::world();
  const int n = w.size();
  const std::string e = mt_test::error_of([&] { dist::make_grid(w, n + 1); });
  EXPECT_TRUE(mt_test::contains(e, "make_grid: a world of " + std::to_string(n) + " ranks cannot be split into " +
                                       std::to_string(n + 1) + " pipeline stages"))
      << e;
  EXPECT_THROW(dist::make_grid(w, 0), std::invalid_argument);
  if (n == 4) {
    EXPECT_THROW(dist::make_grid(w, 3), std::invalid_argument);
  }
}

// The 3D grid (Megatron's order, tensor ranks adjacent): for every stages × tensor size dividing the world,
// each rank's coordinates, and the members of its three groups in their rank order. Runs at 2 and 4 ranks
// and, registered on its own, at 8 (the 2 × 2 × 2 grid).
TEST(L13_Grid, DataPipelineTensorGroupsInMegatronsOrder) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  for (int stages = 1; stages <= n; ++stages) {
    for (int t = 1; t <= n; ++t) {
      if (n % (stages * t) != 0) continue;
      const dist::Grid g = dist::make_grid(w, stages, t);
      const int d = n / (stages * t);
      const std::string where = std::to_string(stages) + " stages × tensor " + std::to_string(t);
      EXPECT_EQ(g.tp_size, t) << where;
      EXPECT_EQ(g.dp_size, d) << where;
      EXPECT_EQ(g.tp_rank, r % t) << where;
      EXPECT_EQ(g.dp_rank, (r / t) % d) << where;
      EXPECT_EQ(g.stage, r / (t * d)) << where;
      EXPECT_EQ(g.world_rank(g.stage, g.dp_rank, g.tp_rank), r) << where;
      std::vector<std::int32_t> tensor_expect, data_expect, pipe_expect;
      for (int q = 0; q < t; ++q) tensor_expect.push_back(g.world_rank(g.stage, g.dp_rank, q));
      for (int q = 0; q < d; ++q) data_expect.push_back(g.world_rank(g.stage, q, g.tp_rank));
      for (int s = 0; s < stages; ++s) pipe_expect.push_back(g.world_rank(s, g.dp_rank, g.tp_rank));
      EXPECT_EQ(members(*g.tensor), tensor_expect) << where;
      EXPECT_EQ(members(*g.data), data_expect) << where;
      EXPECT_EQ(members(*g.pipe), pipe_expect) << where;
      EXPECT_EQ(g.tensor->rank(), g.tp_rank) << where;
      // Tensor ranks are adjacent: r and r ± 1 share a tensor group unless a group boundary falls between.
      EXPECT_EQ(tensor_expect.front(), r - g.tp_rank) << where;
    }
  }
  const std::string e = mt_test::error_of([&] { dist::make_grid(w, 1, n + 1); });
  EXPECT_TRUE(mt_test::contains(e, "cannot be split into 1 pipeline stages × " + std::to_string(n + 1) +
                                       " tensor ranks (the number of stages times the tensor-parallel size must")) << e;
}
