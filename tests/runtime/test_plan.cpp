// The run's plan (runtime/plan.h): each rule that bends what the config asks into what runs, tested once
// here; tests/runtime_mpi/test_plan_readers.cpp checks that every reader of a plan sees the same one.
#include <gtest/gtest.h>

#include "minitorch/allocator.h"
#include "runtime/engine.h"
#include "runtime/out_of_memory.h"
#include "runtime/plan.h"
#include "test_util.h"

namespace mr = minitorch::runtime;
using mt_test::contains;

namespace {
mr::Config config(int world, const std::string& extra = "", int micro = 2, int accumulation = 1) {
  return mr::Config::from_json(R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro) +
                                   R"(, "gradient_accumulation_steps": )" + std::to_string(accumulation) +
                                   R"(, "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16})" +
                                   extra + "}",
                               world, "plan.json");
}
std::string zero(int stage, const std::string& more = "") {
  return R"(, "zero_optimization": {"stage": )" + std::to_string(stage) + more + "}";
}
const std::string kOffload = R"(, "offload_optimizer": {"device": "cpu"})";
}  // namespace

TEST(L06_Plan, TheOneRankRuleRunsStagesOneToThreeAsStageZeroWithOneWarning) {
  for (int stage : {0, 1, 2, 3}) {
    SCOPED_TRACE("zero_optimization.stage " + std::to_string(stage));
    const mr::Plan alone = mr::make_plan(config(1, zero(stage)));
    EXPECT_EQ(alone.config_zero_stage, stage);
    EXPECT_EQ(alone.zero_stage, 0);
    EXPECT_EQ(alone.warnings.size(), stage == 0 ? 0u : 1u);
    if (stage > 0) {
      EXPECT_TRUE(contains(alone.warnings[0], "zero_optimization.stage " + std::to_string(stage) +
                                                  " on one data-parallel rank runs as single-rank training (stage 0)"))
          << alone.warnings[0];
    }
    const mr::Plan two = mr::make_plan(config(2, zero(stage)));
    EXPECT_EQ(two.zero_stage, stage);
    EXPECT_TRUE(two.warnings.empty());
  }
  EXPECT_EQ(mr::effective_zero_stage(3, 1, false), 0);
  EXPECT_EQ(mr::effective_zero_stage(3, 2, false), 3);
  EXPECT_EQ(mr::effective_zero_stage(2, 1, true), 2);
}

TEST(L10_Plan, OffloadOnOneRankRunsTheStageAndThePreCheckCountsItsDeviceBytes) {
  const mr::Config c = config(1, zero(2, kOffload));
  const mr::Plan p = mr::make_plan(c);
  EXPECT_TRUE(p.offload_optimizer);
  EXPECT_EQ(p.zero_stage, 2) << "ZeRO-Offload needs the sharded optimizer, whose shard is everything here";
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.save_kind, mr::SaveKind::sharded) << "the sharded optimizer saves its shard";
  // The pre-step check reads the same plan: offload's device bytes PΨ + GΨ/N, not DDP's (P+G+K)Ψ.
  const minitorch::nn::GPTConfig model = mr::model_shape(c, 65);
  const mr::MemoryRun run = mr::memory_run_for(p, c, model, 0);
  EXPECT_EQ(run.zero_stage, 2);
  EXPECT_TRUE(run.offload);
  const double psi = static_cast<double>(model.num_parameters());
  EXPECT_DOUBLE_EQ(mr::device_model_state_bytes(run), 4 * psi + 4 * psi / 1);
  EXPECT_DOUBLE_EQ(mr::device_model_state_bytes(mr::memory_run_for(c, model, 0)), 8 * psi)
      << "the config-only reader makes the same plan";
}

TEST(L10_Plan, TheDeviceAndItsCapacityFromTheConfigOrTheCommandLine) {
  const mr::Plan cpu = mr::make_plan(config(1));
  EXPECT_TRUE(cpu.device.is_cpu());
  EXPECT_EQ(cpu.device_capacity, 0);
  const mr::Plan from_config = mr::make_plan(config(1, R"(, "device": {"type": "sim", "memory": "2MiB"})"));
  EXPECT_TRUE(from_config.device.is_sim());
  EXPECT_EQ(from_config.device_capacity, 2 << 20);
  mr::Plan flags = mr::make_plan(config(1, R"(, "device": {"type": "sim", "memory": "2MiB"})"),
                                 {.device = "sim", .device_memory = "24MiB"});
  EXPECT_EQ(flags.device_capacity, 24 << 20) << "--device-memory overrides device.memory";
  mr::setup_device(flags);
  EXPECT_EQ(minitorch::memory_capacity(minitorch::Device::sim()), 24 << 20) << "setup_device sets the card";
  mr::Plan unlimited = mr::make_plan(config(1), {.device = "sim", .device_memory = std::nullopt});
  mr::setup_device(unlimited);
  EXPECT_EQ(minitorch::memory_capacity(minitorch::Device::sim()), 0);
  const std::vector<std::pair<mr::PlanOverrides, std::string>> bad = {
      {{.device = "cpu", .device_memory = "1MiB"}, "--device-memory is the simulated accelerator's capacity"},
      {{.device = "sim", .device_memory = "0"}, "--device-memory is 0 bytes: give the simulated accelerator's capacity"},
      {{.device = "sim", .device_memory = "lots"}, "--device-memory: "},
      {{.device = "tpu", .device_memory = std::nullopt}, "--device 'tpu' is not a device"}};
  for (const auto& [overrides, message] : bad) {
    try {
      mr::make_plan(config(1), overrides);
      ADD_FAILURE() << message;
    } catch (const mr::ConfigError& e) {
      EXPECT_TRUE(contains(e.what(), message)) << e.what();
    }
  }
  mr::Plan on_cpu = mr::make_plan(config(1, R"(, "activation_checkpointing": {"enabled": true, "cpu_checkpointing": true})"));
  ASSERT_EQ(on_cpu.warnings.size(), 1u);
  EXPECT_TRUE(contains(on_cpu.warnings[0], "on --device cpu they are there already")) << on_cpu.warnings[0];
  EXPECT_TRUE(mr::make_plan(config(1, R"(, "activation_checkpointing": {"enabled": true, "cpu_checkpointing": true})"),
                            {.device = "sim", .device_memory = std::nullopt})
                  .warnings.empty());
}

TEST(L09_Plan, TheGridTheBatchThePrecisionAndTheKindOfSave) {
  const mr::Plan ddp = mr::make_plan(config(4, "", 2, 3));
  EXPECT_EQ(ddp.grid.world, 4);
  EXPECT_EQ(ddp.grid.data, 4);
  EXPECT_EQ(ddp.grid.pipeline, 1);
  EXPECT_EQ(ddp.grid.tensor, 1);
  EXPECT_EQ(ddp.global_batch, 2 * 3 * 4);
  EXPECT_EQ(ddp.save_kind, mr::SaveKind::single_file) << "DDP: every rank holds the whole state; rank 0 writes it";
  EXPECT_EQ(mr::make_plan(config(4, zero(1))).save_kind, mr::SaveKind::sharded);
  const mr::Plan pipe = mr::make_plan(config(4, R"(, "pipeline": {"stages": 2})", 2, 4));
  EXPECT_EQ(pipe.grid.data, 2);
  EXPECT_EQ(pipe.grid.pipeline, 2);
  EXPECT_EQ(pipe.global_batch, 2 * 4 * 2);
  EXPECT_EQ(pipe.save_kind, mr::SaveKind::sharded) << "each stage holds its layers";
  EXPECT_EQ(mr::make_plan(config(1)).precision, mr::Precision::f32);
  const mr::Plan bf16 = mr::make_plan(config(1, R"(, "bf16": {"enabled": true})"));
  EXPECT_EQ(bf16.precision, mr::Precision::bf16);
  EXPECT_EQ(bf16.bytes.P, 2);
  EXPECT_EQ(bf16.bytes.K, 12);
  EXPECT_STREQ(mr::precision_name(mr::make_plan(config(1, R"(, "fp16": {"enabled": true})")).precision), "f16");
  EXPECT_EQ(mr::make_plan(config(2, zero(2, kOffload), 2, 2), {.device = "sim", .device_memory = "24MiB"}).describe(),
            "ZeRO stage 2 + offload_optimizer on 2 ranks (data 2 x pipeline 1 x tensor 1), f32, sim (24.00 MiB), "
            "micro 2 x accumulation 2 x data 2 = 8, sharded save");
}

TEST(L11_Plan, OffloadParamSaysWhichTensorsStayOnTheDevice) {
  // DeepSpeed's default stage3_param_persistence_threshold (1e5) keeps every tensor of the baby GPT whole on the
  // device: offload_param then moves nothing, and the run must say so. At 0 every tensor is offloaded: no word.
  const std::string both = R"(, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"})";
  const mr::Config c = config(2, zero(3, both));
  const mr::Plan plan = mr::make_plan(c);
  const minitorch::nn::GPTConfig model = mr::model_config(c, 63);
  const std::vector<std::string> w = mr::model_warnings(plan, c, model);
  ASSERT_EQ(w.size(), 1u);
  std::int64_t psi = 0;
  for (const auto& [name, shape] : minitorch::nn::GPT::parameter_shapes(model)) {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    psi += n;
  }
  EXPECT_TRUE(contains(w[0], std::to_string(psi) + " of the model's " + std::to_string(psi) + " parameters")) << w[0];
  EXPECT_TRUE(contains(w[0], "stay whole on the device")) << w[0];
  EXPECT_TRUE(contains(w[0], "Set stage3_param_persistence_threshold to 0")) << w[0];
  const mr::Config all = config(2, zero(3, both + R"(, "stage3_param_persistence_threshold": 0)"));
  EXPECT_TRUE(mr::model_warnings(mr::make_plan(all), all, model).empty());
  const mr::Config none = config(2, zero(3));
  EXPECT_TRUE(mr::model_warnings(mr::make_plan(none), none, model).empty()) << "without offload_param: nothing to say";
}
