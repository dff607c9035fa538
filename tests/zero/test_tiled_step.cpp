// zero/tiled_step.h on one process: an AdamW step taken in tiles of any size (tiles that cut through
// parameters, one element, bigger than everything) updates every element as AdamW::step: the same
// arithmetic per element, up to the last bit or two (a tile starting mid-vector takes the kernel's
// scalar path where the whole tensor took its SIMD one, and -O1 builds contract them differently).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "zero/tiled_step.h"

using namespace minitorch;

namespace {
optim::NamedTensors make_params(DType dtype, std::uint64_t seed) {
  Generator gen(seed);
  optim::NamedTensors ps;
  for (auto [name, shape] : {std::pair<const char*, Shape>{"w", {5, 7}}, {"b", {7}}, {"v", {13}}}) {
    Tensor p = Tensor::randn(shape, gen).to(dtype);
    p.set_grad(Tensor::randn(shape, gen).to(dtype));
    ps.emplace_back(name, p);
  }
  return ps;
}
}  // namespace

TEST(L07_TiledStep, AnyTileSizeUpdatesLikeOneAdamWStep) {
  for (DType dtype : {DType::f32, DType::bf16})
    for (std::int64_t tile : {0, 1, 6, 13, 1000}) {  // 0: DeepSpeed's sub_group_size 0, one tensor per tile
      optim::NamedTensors a = make_params(dtype, 3), b = make_params(dtype, 3);
      optim::AdamW ref(a, {.lr = 1e-2f, .weight_decay = 0.1f}), tiled(b, {.lr = 1e-2f, .weight_decay = 0.1f});
      optim::scale_grads(ref.parameters(), 0.5f);  // the reference gets g / 2 (exact in bf16 too) ...
      for (int step = 0; step < 3; ++step) {
        const double want = optim::grad_sum_squares(ref.parameters());
        EXPECT_NEAR(0.25 * zero::tiled_sum_squares(tiled, tile), want, 1e-12 * want);
        ref.step();
        zero::tiled_adamw_step(tiled, 0.5f, tile);  // ... the tiled step g × 0.5 on the way
      }
      EXPECT_EQ(tiled.step_count(), 3);
      for (std::size_t i = 0; i < a.size(); ++i) {
        const std::vector<float> x = a[i].second.to_vector(), y = b[i].second.to_vector();
        ASSERT_EQ(x.size(), y.size());
        for (std::size_t k = 0; k < x.size(); ++k)
          EXPECT_NEAR(y[k], x[k], 1e-6 * std::max(1.f, std::abs(x[k]))) << a[i].first << "[" << k << "] tile " << tile;
      }
    }
}

TEST(L07_TiledStep, ItsTemporaryIsOneF32TileUnderOptimTemp) {
  optim::NamedTensors ps = make_params(DType::bf16, 5);  // 35 + 7 + 13 = 55 elements
  optim::AdamW opt(ps);
  opt.step();  // m, v and the masters exist: what follows allocates only the tiles
  reset_peak_memory();
  zero::tiled_adamw_step(opt, 1.f, 20);
  EXPECT_EQ(memory_stats().peak(MemTag::optim_temp), 20 * 4);
  zero::tiled_sum_squares(opt, 100);
  EXPECT_EQ(memory_stats().peak(MemTag::optim_temp), 55 * 4);
  reset_peak_memory();
  zero::tiled_adamw_step(opt, 1.f, 0);  // one tensor per tile: the biggest, w (5 x 7), sets the peak
  EXPECT_EQ(memory_stats().peak(MemTag::optim_temp), 35 * 4);
  EXPECT_EQ(memory_stats().current(MemTag::optim_temp), 0);
}
