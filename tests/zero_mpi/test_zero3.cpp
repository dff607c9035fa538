// ZeRO-3 (zero/stage3.h), run under `mpirun -np 2` and `-np 4`: N ranks give the losses and the
// parameters of one rank with N-fold accumulation; between steps every unit is sharded and each rank
// holds (P + G + K)·(Ψ + padding)/N bytes of model states, to the byte; each micro-step gathers every
// parameter twice and reduce-scatters it once; released units really free their memory.
#include <gtest/gtest.h>

#include <map>
#include <span>
#include <stdexcept>
#include <string>

#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "test_util.h"
#include "runtime/engine.h"
#include "zero/stage3.h"
#include "zero_test_util.h"

using namespace minitorch;
using namespace zero_test;

namespace {
// Shard every tensor (the default persistence threshold, 1e5, keeps the whole baby GPT whole).
std::string zero3(int accum, bool bf16 = false, const std::string& extra = "") {
  return config_json(3, 2, accum, bf16, 2500, R"(, "stage3_param_persistence_threshold": 0)" + extra);
}

/// Every unit gathered, the parameters read, every unit released again.
std::vector<float> gathered_params(ZeroRun& run) {
  auto* s3 = const_cast<zero::Stage3*>(run.engine->strategy_as<zero::Stage3>());
  if (!s3) throw std::runtime_error(zero_test::kNeedsTwoRanks);
  s3->gather_all();
  std::vector<float> p = run.params();
  s3->release_all();
  return p;
}

void expect_equivalent(int accum, bool bf16, double tol, const std::string& extra = "") {
  auto& world = dist::world();
  const int N = world.size();
  ZeroRun run(zero3(accum, bf16, extra), &world, 11 + 1000 * static_cast<std::uint64_t>(world.rank()));
  ZeroRun ref(config_json(0, 2, accum * N, bf16), nullptr, 11);
  ASSERT_NE(run.engine->strategy_as<zero::Stage3>(), nullptr) << zero_test::kNeedsTwoRanks;
  for (int s = 0; s < 20; ++s) {
    const float a = run.engine->train_batch(*run.sampler), b = ref.engine->train_batch(*ref.sampler);
    EXPECT_LT(std::abs(a - b) / std::abs(b), tol) << "step " << s << ": ZeRO-3 " << a << " vs 1 rank " << b;
  }
  EXPECT_LT(rel_norm(gathered_params(run), ref.params()), tol) << "rank " << world.rank();
}
}  // namespace

TEST(L07_T2_Zero3, NRanksEqualOneRankOver20Steps) { expect_equivalent(1, false, 1e-5); }

TEST(L07_T2_Zero3, NRanksWithAccumulationEqualOneRankOver20Steps) { expect_equivalent(2, false, 1e-5); }

TEST(L07_Zero3, WithoutPrefetchTheSameTraining) { expect_equivalent(2, false, 1e-5, R"(, "stage3_prefetch_bucket_size": 0)"); }

TEST(L07_Zero3, Bf16NRanksEqualOneRankWithinBf16Precision) { expect_equivalent(1, true, 2e-2); }

TEST(L07_Zero3, DefaultPersistenceKeepsTheBabyGptWholeAndStillTrainsTheSame) {
  const int N = dist::world().size();
  zero_test::expect_equivalent(config_json(3, 2, 1), config_json(0, 2, N), 1e-5);
}

TEST(L07_T3_Zero3, UnitsAreShardedBetweenStepsAndModelStatesAreTheFormulaToTheByte) {
  auto& world = dist::world();
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "f32");
    ZeroRun run(zero3(2, bf16), &world, 11);
    run.train(2);
    const auto* s3 = run.engine->strategy_as<zero::Stage3>();
    ASSERT_NE(s3, nullptr) << zero_test::kNeedsTwoRanks;
    const zero::Partition& part = s3->partition();
    ASSERT_EQ(s3->units().size(), 3u) << "the outer unit and 2 blocks";
    for (const zero::Unit& unit : s3->units()) EXPECT_EQ(unit.state(), zero::Unit::State::sharded) << unit.name();
    for (const auto& [name, p] : run.engine->model().named_parameters()) EXPECT_TRUE(p.is_released()) << name;
    const std::int64_t N = world.size(), psi = run.psi(), flat = psi + part.padding();
    std::int64_t mine = 0;
    for (const zero::ShardPiece& p : part.pieces()) mine += p.range.size();
    const std::int64_t P = bf16 ? 2 : 4, G = P, K = bf16 ? 12 : 8;
    // docs/design.md §8: (P + G + K)·Ψ/N, plus the padding (each unit's flat buffer divides by N).
    const zero::ModelStateBytes& measured = run.engine->measured_model_states();
    EXPECT_EQ(measured.param, P * flat / N) << "Ψ = " << psi << ", padding " << part.padding();
    EXPECT_EQ(measured.grad, G * flat / N);
    EXPECT_EQ(measured.optim, K * mine);
    const zero::ModelStateBytes counted = s3->model_state_bytes();
    EXPECT_EQ(counted.param, measured.param);
    EXPECT_EQ(counted.grad, measured.grad);
    EXPECT_EQ(counted.optim, measured.optim);
    EXPECT_EQ(memory_stats().current(MemTag::param), P * flat / N) << "nothing gathered outlives the step";
  }
}

TEST(L07_T1_Zero3, EachMicroStepGathersTwiceAndReduceScattersOnce) {
  auto& world = dist::world();
  const std::int64_t N = world.size();
  for (int accum : {1, 2}) {
    ZeroRun run(zero3(accum), &world, 11);
    const auto* s3 = run.engine->strategy_as<zero::Stage3>();
    ASSERT_NE(s3, nullptr) << zero_test::kNeedsTwoRanks;
    const std::int64_t flat = run.psi() + s3->partition().padding();
    const std::int64_t units = static_cast<std::int64_t>(s3->units().size());
    std::int64_t chunks = 0;  // a unit bigger than reduce_bucket_size is reduce-scattered in chunks (ZeRO-R's C_B)
    for (const zero::Unit& unit : s3->units())
      chunks += zero::ShardReduction::chunks(unit.numel(), static_cast<int>(N), run.cfg.zero.reduce_bucket_size);
    ASSERT_GT(chunks, units) << "the units exceed the bucket: some are cut";
    for (int s = 0; s < 2; ++s) {
      auto per_op = traffic_of_one_step(run);  // op -> (calls, elements)
      SCOPED_TRACE("accumulation " + std::to_string(accum) + ", step " + std::to_string(s));
      // docs/design.md §8: 3A·(N−1)/N·Ψ elements per step (plus padding).
      EXPECT_EQ(per_op["all_gather"], std::make_pair(2 * accum * units, 2 * accum * (N - 1) * flat / N));
      EXPECT_EQ(per_op["reduce_scatter"], std::make_pair(accum * chunks, accum * (N - 1) * flat / N));
      EXPECT_EQ(per_op["all_reduce"].first, 1) << "the global norm";
      EXPECT_EQ(per_op.size(), 3u);
    }
  }
}

// A forward that stops in block 0 after its pre-forward hook prefetched block 1: release_all must
// finish that gather before freeing the buffer it writes into, and leave every unit sharded.
TEST(L07_T3_Zero3, ReleaseFinishesAPrefetchThatWasNeverUsed) {
  auto& world = dist::world();
  ZeroRun run(zero3(1, false, R"(, "stage3_prefetch_bucket_size": 8000)"), &world, 11);
  auto* s3 = const_cast<zero::Stage3*>(run.engine->strategy_as<zero::Stage3>());
  ASSERT_NE(s3, nullptr) << zero_test::kNeedsTwoRanks;
  ASSERT_EQ(s3->units().size(), 3u) << "the outer unit and 2 blocks";
  const zero::Unit& block1 = s3->units().back();
  {
    HookHandle stop = run.engine->model().blocks[0]->register_pre_forward_hook(
        [](nn::Module&, std::span<const Tensor>) { throw std::runtime_error("stop in block 0"); });
    data::Batch b = run.sampler->sample(world.rank(), 0, world.size(), 0, 1);
    EXPECT_THROW(run.engine->forward(b.x, b.y), std::runtime_error);
  }
  EXPECT_EQ(block1.state(), zero::Unit::State::gathering) << "block 1 prefetched, not used";
  std::string error;
  try {
    s3->release_all();
  } catch (const std::exception& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "") << "release of a unit whose prefetch is in flight";
  for (const zero::Unit& unit : s3->units())
    EXPECT_EQ(unit.state(), zero::Unit::State::sharded) << "unit " << unit.name();
  const std::int64_t flat = run.psi() + s3->partition().padding();
  EXPECT_EQ(memory_stats().current(MemTag::param), 4 * flat / world.size()) << "only the fp32 shards are left";
}

TEST(L07_T3_Zero3, ReleasedUnitsFreeTheirMemoryAndPrefetchOverlapsTheNextGather) {
  auto& world = dist::world();
  // 4 blocks, and a prefetch of one block's elements (12·24² + 13·24 = 7224) ahead.
  std::string json = zero3(1, false, R"(, "stage3_prefetch_bucket_size": 8000)");
  json.replace(json.find(R"("n_layer": 2)"), 12, R"("n_layer": 4)");
  ZeroRun run(json, &world, 11);
  run.train(1);
  const auto* s3 = run.engine->strategy_as<zero::Stage3>();
  ASSERT_NE(s3, nullptr) << zero_test::kNeedsTwoRanks;
  ASSERT_EQ(s3->units().size(), 5u);
  std::int64_t biggest = 0, whole = 0;
  for (const zero::Unit& unit : s3->units()) {
    biggest = std::max(biggest, unit.numel());
    whole += unit.numel();
  }
  const std::int64_t shards = memory_stats().current(MemTag::param);
  reset_peak_memory();
  run.train(1);
  // During the step at most the outer unit, the running block and one prefetched block are whole:
  // far below the whole model on every rank.
  const std::int64_t peak = memory_stats().peak(MemTag::param) - shards;
  EXPECT_LE(peak, 4 * 3 * biggest) << "gathered bytes at the peak";
  EXPECT_LT(peak, 4 * whole) << "the whole model was gathered at once";
  EXPECT_GT(s3->prefetched(), 0);
}
