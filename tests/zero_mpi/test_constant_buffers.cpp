// ZeRO-R's constant buffers (docs/design.md §6): a ZeRO-3 unit bigger than reduce_bucket_size is reduce-scattered
// in chunks (zero/bucket_reducer.h), so the `comm` pool's peak is runtime::reduction_buffer_bytes of the bucket
// size — the same for a GPT of 2 blocks and of 8, and for a wider one — and the training is exactly what one
// reduce-scatter per unit gives.
#include <gtest/gtest.h>

#include <cstdio>

#include "minitorch/allocator.h"
#include "runtime/formulas.h"
#include "zero/stage3.h"
#include "zero_test_util.h"

using namespace minitorch;
using zero_test::all_params;
using zero_test::config_json;
using zero_test::rel_norm;
using zero_test::ZeroRun;

namespace {

/// config_json's ZeRO-3 baby with `layers` blocks of width `width` (2 heads), buckets of `bucket` elements.
std::string zero3(int layers, int width, std::int64_t bucket, bool bf16, bool overlap) {
  std::string json = config_json(3, 2, 2, bf16, bucket,
                                 std::string(R"(, "stage3_param_persistence_threshold": 0, "overlap_comm": )") +
                                     (overlap ? "true" : "false"));
  const std::string model = R"("n_layer": 2, "n_head": 2, "n_embd": 24)";
  json.replace(json.find(model), model.size(),
               R"("n_layer": )" + std::to_string(layers) + R"(, "n_head": 2, "n_embd": )" + std::to_string(width));
  return json;
}

/// The most elements one unit holds (a block's, or the outer unit's: embeddings and head).
std::int64_t largest_unit(const ZeroRun& run) {
  std::int64_t most = 0;
  for (const zero::Unit& unit : run.engine->strategy_as<zero::Stage3>()->units()) most = std::max(most, unit.numel());
  return most;
}

struct CommPeak {
  std::int64_t peak = 0, largest_unit = 0;
};

/// The device's `comm` peak over the second optimizer step (the first allocates AdamW's states).
CommPeak comm_peak(int layers, int width, std::int64_t bucket, bool bf16, bool overlap) {
  auto& world = dist::world();
  ZeroRun run(zero3(layers, width, bucket, bf16, overlap), &world, 11, Device::sim());
  if (!run.engine->strategy_as<zero::Stage3>()) throw std::runtime_error(zero_test::kNeedsTwoRanks);
  run.train(1);
  reset_peak_memory(Device::sim());
  run.train(1);
  return {memory_stats(Device::sim()).peak(MemTag::comm), largest_unit(run)};
}

}  // namespace

TEST(L11_ConstantBuffers, AUnitReducedInChunksTrainsAsInOneReduceScatter) {
  auto& world = dist::world();
  // reduce_bucket_size 600: each block (7 224 elements at n_embd 24) in chunks of 300 per rank on 2 ranks, against
  // the same ZeRO-3 with buckets bigger than any unit (one reduce-scatter each) and one rank accumulating.
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "f32");
    ZeroRun chunked(zero3(2, 24, 600, bf16, true), &world, 11);
    ZeroRun whole(zero3(2, 24, 500'000'000, bf16, true), &world, 11);
    ZeroRun one(config_json(0, 2, 2 * world.size(), bf16), nullptr, 11);
    ASSERT_GT(largest_unit(chunked), 600) << "a unit must exceed the bucket";
    const double tol = bf16 ? 1e-3 : 1e-6;
    for (int s = 0; s < 10; ++s) {
      const float a = chunked.engine->train_batch(*chunked.sampler), b = whole.engine->train_batch(*whole.sampler);
      const float c = one.engine->train_batch(*one.sampler);
      EXPECT_LT(std::abs(a - b) / std::abs(b), tol) << "step " << s << ": chunks " << a << " vs one reduce-scatter " << b;
      EXPECT_LT(std::abs(a - c) / std::abs(c), bf16 ? 2e-2 : 1e-5) << "step " << s << ": chunks " << a << " vs 1 rank " << c;
    }
    EXPECT_LT(rel_norm(all_params(chunked), all_params(whole)), tol) << "rank " << world.rank();
  }
}

TEST(L11_ConstantBuffers, CommPeakIsTheBucketBoundWhateverTheDepthAndWidth) {
  const int N = dist::world().size();
  const std::int64_t bucket = 1000;
  for (bool bf16 : {false, true}) {
    const int G = bf16 ? 2 : 4;
    const std::int64_t bound = runtime::reduction_buffer_bytes(bucket, N, G);
    for (bool overlap : {false, true}) {
      SCOPED_TRACE(std::string(bf16 ? "bf16" : "f32") + (overlap ? ", overlap_comm" : ", no overlap"));
      std::int64_t first = -1;
      for (auto [layers, width] : {std::pair{2, 24}, {8, 24}, {2, 48}, {8, 48}}) {
        const CommPeak m = comm_peak(layers, width, bucket, bf16, overlap);
        // What one reduce-scatter per unit would hold: two units in flight, N·s packed + s reduced each.
        const std::int64_t unchunked = 2 * (G + (bf16 ? 4 : 0)) * (m.largest_unit + m.largest_unit / N);
        if (dist::world().rank() == 0)
          std::printf("[ constant buffers ] %s%s n_layer %d n_embd %d: largest unit %lld elements, comm peak %lld B, "
                      "bound %lld B, one reduce-scatter per unit %lld B\n",
                      bf16 ? "bf16" : "f32", overlap ? " overlap" : "", layers, width,
                      static_cast<long long>(m.largest_unit), static_cast<long long>(m.peak),
                      static_cast<long long>(bound), static_cast<long long>(unchunked));
        EXPECT_GT(m.largest_unit, bucket) << "n_layer " << layers << ", n_embd " << width;
        EXPECT_LE(m.peak, bound) << "n_layer " << layers << ", n_embd " << width;
        EXPECT_LT(m.peak, unchunked) << "n_layer " << layers << ", n_embd " << width;
        // Two reductions in flight, each on a full chunk (the first chunk of the next unit is launched while the
        // chunks of the one before are reduced): the bound exactly, whatever the model. Chunks after the first
        // start only when a reduction is waited, at the same point on every rank, so the buffers are the same
        // every run — except bf16's f32 copies under overlap_comm, which go when a poll finds their chunk done.
        if (bf16 && overlap) continue;
        EXPECT_EQ(m.peak, bound) << "n_layer " << layers << ", n_embd " << width;
        if (first < 0) first = m.peak;
        EXPECT_EQ(m.peak, first) << "the same buffers for every depth and width";
      }
    }
  }
}
