// ZeRO-Infinity's offload_param "cpu" (docs/design.md §10) on 2 and 4 `sim` ranks: each unit's shard lives in
// host memory and goes up before each gather, the host AdamW updates it in place, and the run trains as plain
// ZeRO-3 does; the bytes of each pool and of each step's copies equal runtime::exact_offload_states to the
// byte, and the paper-style formula (runtime::offload_param_state_bytes) up to the padding.
#include <gtest/gtest.h>

#include "minitorch/allocator.h"
#include "runtime/estimate.h"
#include "runtime/formulas.h"
#include "zero/stage3.h"
#include "zero_test_util.h"

using namespace minitorch;
using zero_test::config_json;
using zero_test::ZeroRun;
using zero_test::all_params;

namespace {

/// The ZeRO section's extra keys: offload of the optimizer (and of the parameters), with tensors of at most
/// `persistent` elements kept whole on the device (0: every tensor in a unit; 100: the LayerNorms and biases
/// of n_embd = 24 whole, the matrices in units).
std::string offload(bool params, int persistent) {
  return R"(, "stage3_param_persistence_threshold": )" + std::to_string(persistent) +
         R"(, "offload_optimizer": {"device": "cpu"})" + (params ? R"(, "offload_param": {"device": "cpu"})" : "");
}

std::string plain(int persistent) {
  return R"(, "stage3_param_persistence_threshold": )" + std::to_string(persistent);
}

TransferStats one_step_transfers(ZeroRun& run) {
  const TransferStats before = transfer_stats();
  run.engine->train_batch(*run.sampler);
  const TransferStats after = transfer_stats();
  return {after.h2d - before.h2d, after.d2h - before.d2h, after.io_h2d - before.io_h2d, after.io_d2h - before.io_d2h};
}

/// What runtime::exact_offload_states predicts for this rank of `run` (a stage-3 run).
runtime::ExactOffload predicted(const ZeroRun& run, bool params) {
  const auto* stage3 = run.engine->strategy_as<zero::Stage3>();
  const zero::Partition& partition = stage3->partition();
  std::vector<bool> persistent(partition.buckets().size(), true);
  for (const zero::Unit& unit : stage3->units()) persistent[unit.bucket_index()] = false;
  return runtime::exact_offload_states(3, partition, run.engine->plan().bytes, persistent,
                                       {.param = params, .micro_steps = run.cfg.gradient_accumulation_steps});
}

}  // namespace

TEST(L11_T2_OffloadParam, TrainsAsPlainZero3WithTheShardsOnTheHost) {
  auto& world = dist::world();
  for (bool bf16 : {false, true})
    for (int persistent : {0, 100}) {
      SCOPED_TRACE(std::string(bf16 ? "bf16" : "f32") + ", persistence threshold " + std::to_string(persistent));
      std::vector<float> plain_losses, plain_params;
      {
        ZeroRun run(config_json(3, 2, 2, bf16, 2500, plain(persistent)), &world, 11, Device::sim());
        plain_losses = run.train(4);
        plain_params = all_params(run);
      }
      ZeroRun run(config_json(3, 2, 2, bf16, 2500, offload(true, persistent)), &world, 11, Device::sim());
      EXPECT_TRUE(run.engine->plan().offload_param);
      const std::vector<float> losses = run.train(4);
      // The host AdamW computes what the device's does (minitorch/host_adamw.h): f32 within 1e-6 relative; a
      // 16-bit run rounds the same updates to bf16 in another order of operations, within 1e-3.
      const double tol = bf16 ? 1e-3 : 1e-6;
      for (std::size_t s = 0; s < losses.size(); ++s)
        EXPECT_LE(std::abs(losses[s] - plain_losses[s]), tol * std::abs(plain_losses[s])) << "step " << s;
      ASSERT_EQ(plain_params.size(), static_cast<std::size_t>(run.psi()));
      EXPECT_LT(zero_test::rel_norm(all_params(run), plain_params), tol);
      // Every unit's shard is in host memory; between steps the device holds no unit's parameters.
      for (const zero::Unit& unit : run.engine->strategy_as<zero::Stage3>()->units()) {
        EXPECT_EQ(unit.bucket().home, zero::ShardHome::host) << unit.name();
        EXPECT_TRUE(unit.bucket().param_shard.device().is_cpu()) << unit.name();
        EXPECT_EQ(unit.state(), zero::Unit::State::sharded) << unit.name();
        EXPECT_EQ(unit.parameter_bytes(), 0) << unit.name() << ": no device bytes while sharded";
      }
    }
}

TEST(L11_T2_OffloadParam, PoolsAndCopiesPerStepEqualTheFormulaToTheByte) {
  auto& world = dist::world();
  for (bool bf16 : {false, true})
    for (int persistent : {0, 100}) {
      SCOPED_TRACE(std::string(bf16 ? "bf16" : "f32") + ", persistence threshold " + std::to_string(persistent));
      ZeroRun run(config_json(3, 2, 2, bf16, 2500, offload(true, persistent)), &world, 11, Device::sim());
      run.train(2);
      const runtime::ExactOffload e = predicted(run, true);
      const zero::ModelStateBytes& dev = run.engine->measured_model_states();
      const zero::ModelStateBytes& host = run.engine->measured_host_model_states();
      EXPECT_EQ(dev.param, e.device.param);
      EXPECT_EQ(dev.grad, e.device.grad);
      EXPECT_EQ(dev.optim, 0);
      EXPECT_EQ(host.param, e.host.param);
      EXPECT_EQ(host.grad, e.host.grad);
      EXPECT_EQ(host.optim, e.host.optim);
      const TransferStats t = one_step_transfers(run);
      EXPECT_EQ(t.d2h, e.d2h) << "the gradient shard down once per step";
      EXPECT_EQ(t.h2d, e.h2d) << "each unit's shard up twice per micro-step (forward, backward)";
      if (persistent == 0) {
        // Nothing persistent: the device keeps only the gradient shards, and the paper-style formula holds up to
        // the padding (Ψ/N there is real; the shards carry the padding).
        EXPECT_EQ(dev.param, 0);
        const std::int64_t P = bf16 ? 2 : 4, A = run.cfg.gradient_accumulation_steps;
        const auto* stage3 = run.engine->strategy_as<zero::Stage3>();
        const double pad = static_cast<double>(stage3->partition().padding()) / world.size();
        const runtime::OffloadEstimate f = runtime::offload_param_state_bytes(
            static_cast<double>(run.psi()), world.size(), run.engine->plan().bytes, static_cast<int>(A));
        EXPECT_NEAR(static_cast<double>(host.param + host.grad + host.optim), f.host.total(), 16 * (pad + 1))
            << "(P+G+K)Ψ/N = 16Ψ/N";
        EXPECT_NEAR(static_cast<double>(host.param), f.host.param, P * (pad + 1));
        EXPECT_NEAR(static_cast<double>(t.h2d), f.h2d, 2.0 * static_cast<double>(A * P) * (pad + 1)) << "2A·PΨ/N";
        EXPECT_NEAR(static_cast<double>(t.d2h), f.d2h, P * (pad + 1)) << "GΨ/N";
      }
    }
}

TEST(L11_OffloadParam, MovesThePlainOffloadsBytesFromTheDeviceToTheHost) {
  // Against offload_optimizer alone: the shards' P bytes per element leave the device for the host, and the
  // copies trade one P·Ψ/N up after the step for 2A of them before the gathers.
  auto& world = dist::world();
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "f32");
    zero::ModelStateBytes dev_opt, host_opt;
    TransferStats t_opt{};
    runtime::ExactOffload e_opt;
    {
      ZeroRun run(config_json(3, 2, 2, bf16, 2500, offload(false, 0)), &world, 11, Device::sim());
      run.train(1);
      dev_opt = run.engine->measured_model_states(), host_opt = run.engine->measured_host_model_states();
      t_opt = one_step_transfers(run);
      e_opt = predicted(run, false);
    }
    EXPECT_EQ(dev_opt.param, e_opt.device.param) << "exact_offload_states without offload_param, as L10 tests it";
    EXPECT_EQ(t_opt.h2d, e_opt.h2d);
    ZeroRun run(config_json(3, 2, 2, bf16, 2500, offload(true, 0)), &world, 11, Device::sim());
    run.train(1);
    const zero::ModelStateBytes dev = run.engine->measured_model_states(), host = run.engine->measured_host_model_states();
    const std::int64_t shards = dev_opt.param;  // P·Σ units numel/N: all of the device's parameters before
    EXPECT_EQ(dev.param, 0);
    EXPECT_EQ(dev.grad, dev_opt.grad);
    const std::int64_t mine = host.grad / (bf16 ? 2 : 4);  // the elements this rank owns
    EXPECT_EQ(host.param, shards) << "the shards, padding included, now in host memory";
    if (bf16) {  // ZeRO-Offload's 16-bit staging of the updated pieces is gone: the step writes the shard itself
      EXPECT_EQ(host_opt.param, 2 * mine);
      EXPECT_EQ(host.optim, host_opt.optim) << "f32 master, m, v: 12 bytes per owned element either way";
    } else {  // an f32 shard on the host is its own master: 4 bytes per owned element fewer under optim
      EXPECT_EQ(host_opt.param, 0);
      EXPECT_EQ(host_opt.optim - host.optim, 4 * mine);
    }
    const TransferStats t = one_step_transfers(run);
    EXPECT_EQ(t.d2h, t_opt.d2h) << "the gradients come down as before";
    EXPECT_GT(t.h2d, t_opt.h2d);
  }
}

TEST(L11_T2_OffloadParam, PrefetchCarriesTheCopyWithTheGather) {
  // The copy is part of the gather: a prefetched unit's shard goes up when its gather starts, so the bytes per
  // step are the same with and without prefetch, and prefetching still happens.
  auto& world = dist::world();
  auto run_with = [&](std::int64_t prefetch) {
    ZeroRun run(config_json(3, 2, 2, false, 2500,
                            offload(true, 0) + R"(, "stage3_prefetch_bucket_size": )" + std::to_string(prefetch)),
                &world, 11, Device::sim());
    const std::vector<float> losses = run.train(2);
    const TransferStats t = one_step_transfers(run);
    return std::tuple{losses, t.h2d, run.engine->strategy_as<zero::Stage3>()->prefetched()};
  };
  const auto [losses_on, h2d_on, prefetched_on] = run_with(50'000'000);
  const auto [losses_off, h2d_off, prefetched_off] = run_with(0);
  EXPECT_GT(prefetched_on, 0);
  EXPECT_EQ(prefetched_off, 0);
  EXPECT_EQ(h2d_on, h2d_off);
  EXPECT_EQ(losses_on, losses_off) << "prefetch changes when, not what";
}
