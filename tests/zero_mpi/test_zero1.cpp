// ZeRO-1 (zero/stage1.h), run under `mpirun -np 2` and `-np 4`: N ranks give the losses and the
// parameters of one rank with N-fold accumulation; each rank holds (P+G)·(Ψ + padding) + K·(its
// shard) bytes of model states, to the byte, and the shards add up to K·Ψ; each step moves one
// reduce-scatter and one all-gather of Ψ + padding elements plus the norm's scalar.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "test_util.h"
#include "zero_test_util.h"
#include "runtime/engine.h"
#include "zero/stage1.h"

using namespace minitorch;

namespace {
using namespace zero_test;

void expect_equivalent(int accum, bool bf16, double tol) {
  const int N = minitorch::dist::world().size();
  zero_test::expect_equivalent(config_json(1, 2, accum, bf16), config_json(0, 2, accum * N, bf16), tol);
}
}  // namespace

TEST(L06_T2_Zero1, NRanksEqualOneRankWithAccumulationOver20Steps) { expect_equivalent(1, false, 1e-5); }

TEST(L06_Zero1, NRanksWithAccumulationEqualOneRankOver20Steps) { expect_equivalent(2, false, 1e-5); }

// bf16 rounds each update into the parameters: the summation order of the reduction (N partial sums
// vs one) changes a rounding now and then, so the runs agree to bf16's precision, not f32's.
TEST(L06_Zero1, Bf16NRanksEqualOneRankWithinBf16Precision) { expect_equivalent(1, true, 2e-2); }

// Clipping and AdamW hide a factor N in the gradients (a sum instead of a mean trains almost the
// same): compare the reduced gradients themselves, this rank's shard against the 1-rank gradients.
TEST(L06_T3_Zero1, ReducedShardIsTheOneRankGradientOfTheGlobalBatch) {
  auto& world = dist::world();
  const int N = world.size();
  ZeroRun zero1(config_json(1, 2, 1), &world, 11);
  ZeroRun ref(config_json(0, 2, N), nullptr, 11);
  for (int m = 0; m < N; ++m) {
    data::Batch b = ref.sampler->sample(0, 0, 1, m, N);
    ref.engine->backward(ref.engine->forward(b.x, b.y));
    if (m + 1 < N) ref.engine->step();  // counts the micro-step; the gradients keep adding up
  }
  data::Batch b = zero1.sampler->sample(world.rank(), 0, N, 0, 1);
  zero1.engine->backward(zero1.engine->forward(b.x, b.y));
  zero1.engine->strategy().reduce_gradients();
  const auto* s1 = zero1.engine->strategy_as<zero::Stage1>();
  EXPECT_LT(shard_gradient_error(s1->partition(), s1->optimizer(), ref.engine->model()), 1e-5)
      << "rank " << world.rank() << ": a sum instead of a mean is off by " << N << "x";
}

TEST(L06_T1_Partition, ShardsCutThroughParametersAndCoverEachElementOnce) {
  auto& world = dist::world();
  // The partition alone, of a stage-0 run's model: a ZeRO-1 engine would build its step too (task L06.2).
  ZeroRun run(config_json(0, 2, 1), &world, 11);
  zero::Partition part(run.engine->model().named_parameters(), /*bucket_elements=*/2500, world.rank(), world.size());
  part.adopt_parameters();
  // Every rank's pieces, counted over the ranks: each parameter element exactly once.
  std::int64_t mine = 0;
  for (const zero::ShardPiece& p : part.pieces()) mine += p.range.size();
  Tensor total = Tensor::full({1}, static_cast<float>(mine));
  world.all_reduce(total, dist::ReduceOp::sum);
  EXPECT_EQ(static_cast<std::int64_t>(total.item()), run.psi());
  // Some piece is a strict part of its parameter (the layout really cuts), and each bucket's padding < N.
  bool cut = false;
  for (const zero::ShardPiece& p : part.pieces())
    cut |= p.range.size() < part.params()[p.param].second.numel();
  EXPECT_TRUE(cut);
  EXPECT_GT(part.buckets().size(), 2u);
  for (const zero::ShardedBucket& b : part.buckets()) EXPECT_LT(b.params.padding(), world.size());
  // The parameters live in the flat buffers: writing a slot writes the parameter.
  const zero::ShardedBucket& b0 = part.buckets().front();
  EXPECT_EQ(part.params()[b0.members.front()].second.raw_data(), b0.params.view(0).raw_data());
}

namespace {
void expect_model_states_to_the_byte(bool bf16) {
  auto& world = dist::world();
  const std::int64_t N = world.size();
  ZeroRun run(config_json(1, 2, 1, bf16), &world, 11);
  run.train(2);
  const auto* s1 = run.engine->strategy_as<zero::Stage1>();
  const zero::Partition& part = s1->partition();
  const std::int64_t psi = run.psi(), pad = part.padding();
  std::int64_t mine = 0;
  for (const zero::ShardPiece& p : part.pieces()) mine += p.range.size();
  const std::int64_t P = bf16 ? 2 : 4, G = P, K = bf16 ? 12 : 8;
  // docs/design.md §8: (P + G)·Ψ + K·Ψ/N, plus the padding of the flat buffers; "Ψ/N" is this
  // rank's share of the pieces (the shards are equal, the padding falls in the last ranks').
  const zero::ModelStateBytes want{P * (psi + pad), G * (psi + pad), K * mine};
  const zero::ModelStateBytes& measured = run.engine->measured_model_states();  // the allocator's tags
  EXPECT_EQ(measured.param, want.param) << "Ψ = " << psi << ", padding " << pad;
  EXPECT_EQ(measured.grad, want.grad);
  EXPECT_EQ(measured.optim, want.optim) << "this rank's pieces: " << mine << " elements";
  const zero::ModelStateBytes counted = s1->model_state_bytes();
  EXPECT_EQ(counted.param, want.param);
  EXPECT_EQ(counted.grad, want.grad);
  EXPECT_EQ(counted.optim, want.optim);
  // Over the ranks, the optimizer states are K·Ψ exactly: sharded, not replicated.
  Tensor optim_total = Tensor::full({1}, static_cast<float>(measured.optim));
  world.all_reduce(optim_total, dist::ReduceOp::sum);
  EXPECT_EQ(static_cast<std::int64_t>(optim_total.item()), K * psi);
  EXPECT_LE(mine, (psi + pad) / N);
}
}  // namespace

TEST(L06_T2_Zero1, ModelStatesPerRankAreTheFormulaToTheByteInFp32) { expect_model_states_to_the_byte(false); }

TEST(L06_Zero1, ModelStatesPerRankAreTheFormulaToTheByteInBf16) { expect_model_states_to_the_byte(true); }

TEST(L06_T2_Zero1, EachStepMovesOneReduceScatterAndOneAllGatherOfPsiAndTheNorm) {
  auto& world = dist::world();
  const std::int64_t N = world.size();
  for (int accum : {1, 3}) {  // stage 1 reduces at the boundary only: the same with accumulation
    ZeroRun run(config_json(1, 2, accum), &world, 11);
    const zero::Partition& part = run.engine->strategy_as<zero::Stage1>()->partition();
    const std::int64_t flat = run.psi() + part.padding(), buckets = static_cast<std::int64_t>(part.buckets().size());
    for (int s = 0; s < 2; ++s) {
      auto per_op = traffic_of_one_step(run);  // op -> (calls, elements)
      SCOPED_TRACE("accumulation " + std::to_string(accum) + ", step " + std::to_string(s));
      EXPECT_EQ(per_op["reduce_scatter"], std::make_pair(buckets, (N - 1) * flat / N));
      EXPECT_EQ(per_op["all_gather"], std::make_pair(buckets, (N - 1) * flat / N));
      const int r = world.rank(), n = world.size();
      EXPECT_EQ(per_op["all_reduce"],
                std::make_pair(std::int64_t{1}, dist::reduce_scatter_volume(1, n, r) + dist::all_gather_volume(1, n, r)))
          << "the global norm: one scalar";
      EXPECT_EQ(per_op.size(), 3u);
    }
  }
}

TEST(L06_T3_Zero1, OverlapCommReduceScattersFromTheHooksWhileBackwardRuns) {
  auto& world = dist::world();
  for (bool overlap : {false, true}) {
    SCOPED_TRACE(overlap ? "overlap_comm true" : "overlap_comm false");
    ZeroRun run(config_json(1, 2, 2, false, 2500, std::string(R"(, "overlap_comm": )") + (overlap ? "true" : "false")),
                &world, 11);
    run.train(1);
    const auto* s1 = run.engine->strategy_as<zero::Stage1>();
    const int buckets = static_cast<int>(s1->partition().buckets().size());
    // With overlap every bucket but those a hook cannot see end first starts inside backward; the
    // embeddings' bucket holds wte, which the head reuses, so its hook fires last of all but still inside.
    if (overlap) EXPECT_EQ(s1->reducer().launched_in_backward(), buckets);
    else EXPECT_EQ(s1->reducer().launched_in_backward(), 0);
  }
}
