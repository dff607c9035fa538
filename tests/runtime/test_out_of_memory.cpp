// Sizes as people write them (runtime/byte_size.h), ZeRO-Offload's formulas (runtime/formulas.h) and the
// out-of-memory explanation (runtime/out_of_memory.h): its figures are this run's, from the formulas.
#include <gtest/gtest.h>

#include "runtime/activation_formulas.h"
#include "runtime/byte_size.h"
#include "runtime/engine.h"
#include "runtime/formulas.h"
#include "runtime/out_of_memory.h"
#include "test_util.h"

namespace mz = minitorch::runtime;
using mt_test::contains;

TEST(L10_ByteSize, UnitsAndBareBytes) {
  EXPECT_EQ(mz::parse_byte_size("24MiB"), 24 * 1048576);
  EXPECT_EQ(mz::parse_byte_size(" 24 MiB "), 24 * 1048576);
  EXPECT_EQ(mz::parse_byte_size("1.5GB"), 1500000000);
  EXPECT_EQ(mz::parse_byte_size("512KiB"), 524288);
  EXPECT_EQ(mz::parse_byte_size("3kB"), 3000);
  EXPECT_EQ(mz::parse_byte_size("4096"), 4096);
  EXPECT_EQ(mz::parse_byte_size("1e6"), 1000000);
  EXPECT_EQ(mz::parse_byte_size("7B"), 7);
  EXPECT_EQ(mz::parse_byte_size("0"), 0);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "an empty size"},          {"-1MiB", "is negative"},       {"MiB", "is not a size"},
      {"12 XB", "unknown unit 'XB'"}, {"0.3B", "not a whole number"}, {"1e30", "more than 2^62 bytes"},
      {"nan", "is not a size"}};
  for (const auto& [text, message] : bad) {
    try {
      mz::parse_byte_size(text);
      ADD_FAILURE() << "'" << text << "' parsed";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), message)) << text << ": " << e.what();
    }
  }
  EXPECT_EQ(mz::format_mib(25165824), "24.00 MiB");
}

TEST(L10_T2_OffloadFormulas, DeviceHostAndTransfersPerStage) {
  const double psi = 1e6;
  const int n = 4;
  for (bool bf16 : {false, true}) {
    const mz::BytesPerParameter b = mz::bytes_per_parameter(bf16);
    for (int stage = 1; stage <= 3; ++stage) {
      SCOPED_TRACE("stage " + std::to_string(stage) + (bf16 ? " bf16" : " f32"));  // the case, in every failure
      const mz::OffloadEstimate e = mz::offload_state_bytes(stage, psi, n, b);
      const mz::ModelStateEstimate plain = mz::model_state_bytes(stage, psi, n, b);
      EXPECT_DOUBLE_EQ(e.device.param, plain.param);
      EXPECT_DOUBLE_EQ(e.device.grad, plain.grad);
      EXPECT_DOUBLE_EQ(e.device.optim, 0);
      EXPECT_DOUBLE_EQ(e.host.total(), 16 * psi / n) << "16Ψ/N in either precision";
      EXPECT_DOUBLE_EQ(e.host.optim, 12 * psi / n);
      EXPECT_DOUBLE_EQ(e.d2h, b.G * psi / n);
      EXPECT_DOUBLE_EQ(e.h2d, b.P * psi / n);
    }
  }
  // Stage 2 in bf16, by hand: 2Ψ/N down and 2Ψ/N up per step, and the device holds PΨ + GΨ/N = 2Ψ + 2Ψ/N.
  const mz::OffloadEstimate z2 = mz::offload_state_bytes(2, psi, n, mz::bytes_per_parameter(true));
  EXPECT_DOUBLE_EQ(z2.d2h, 2 * psi / n);
  EXPECT_DOUBLE_EQ(z2.h2d, 2 * psi / n);
  EXPECT_DOUBLE_EQ(z2.device.total(), 2 * psi + 2 * psi / n);
  EXPECT_THROW(mz::offload_state_bytes(0, psi, n, mz::bytes_per_parameter(false)), std::invalid_argument);
}

TEST(L10_T3_OutOfMemoryMessage, NamesTheRequestThePoolTheFormulaAndTheLeversOfThisRun) {
  mz::Config cfg = mz::Config::from_json(
      R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
          "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 32}})",
      4, "test.json");
  minitorch::nn::GPTConfig model = mz::model_config(cfg, 63);
  const mz::MemoryRun run = mz::memory_run_for(cfg, model, 2);
  EXPECT_EQ(run.dp_size, 4);
  EXPECT_EQ(run.zero_stage, 0);
  minitorch::MemoryStats in_use;
  in_use.current_bytes[static_cast<int>(minitorch::MemTag::param)] = 4 * static_cast<std::int64_t>(run.psi);
  in_use.current_bytes[static_cast<int>(minitorch::MemTag::activation)] = 1 << 20;
  in_use.current_total = in_use.current_bytes[0] + (1 << 20);
  const minitorch::OutOfMemory e(minitorch::Device::sim(), minitorch::MemTag::grad, 65536, 2 << 20, in_use);
  const std::string msg = mz::explain_out_of_memory(e, run);
  const double psi = run.psi;
  for (const std::string& part :
       {std::string("out of memory on sim of rank 2: 0.06 MiB (65536 B) of grad asked for"),
        std::string("of a capacity of 2.00 MiB (2097152 B)"), std::string("activation 1.00 MiB"),
        "this run: ZeRO stage 0 (DDP), f32 (P, G, K = 4, 4, 8 bytes per parameter), Ψ = " +
            std::to_string(static_cast<std::int64_t>(psi)) + ", N = 4: model states (P+G+K)Ψ = " + mz::format_mib(16 * psi),
        "ZeRO-2: PΨ + (G+K)Ψ/N = " + mz::format_mib(4 * psi + 12 * psi / 4),
        "ZeRO-3 + offload_optimizer (device \"cpu\"): (P+G)Ψ/N = " + mz::format_mib(8 * psi / 4),
        "the host then holds 16Ψ/N = " + mz::format_mib(16 * psi / 4),
        "micro-batch 2 with gradient_accumulation_steps 2 (the same batch): activations about " +
            mz::format_mib(mz::activation_bytes(mz::activation_shape(model, 2, false, 0)).peak()),
        "activation checkpointing (segment_size 1): keeps each block's input, B·T·C·L·4 = 4·32·32·2·4 = " +
            mz::format_mib(4.0 * 32 * 32 * 2 * 4)})
    EXPECT_TRUE(contains(msg, part)) << "missing '" << part << "' in:\n" << msg;
  // Before any allocation: model states beyond the capacity, said at once.
  try {
    mz::check_model_states_fit(run, minitorch::Device::sim(), 1000);
    ADD_FAILURE() << "no error";
  } catch (const mz::OutOfMemoryError& err) {
    EXPECT_TRUE(contains(err.what(), "out of memory on sim of rank 2 before the first step: the model states alone need " +
                                         mz::format_mib(16 * psi)))
        << err.what();
  }
  EXPECT_NO_THROW(mz::check_model_states_fit(run, minitorch::Device::sim(), 0)) << "0: no capacity";
  EXPECT_NO_THROW(mz::check_model_states_fit(run, minitorch::Device::sim(), static_cast<std::int64_t>(16 * psi)));
}

// A Gemini run is told by its placement, with Gemini's levers: the static fractions that move more to the host, then
// auto placement; its model states before the first step are the placement's (auto: only GΨ/N stays on the device).
TEST(L12_OutOfMemoryMessage, GeminiIsToldByItsPlacementWithGeminisLevers) {
  auto config = [](const std::string& gemini) {
    return mz::Config::from_json(
        R"({"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 3}, "gemini": {)" + gemini + R"(},
            "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 32}})",
        4, "test.json");
  };
  const mz::Config static_cfg = config(R"("min_chunk_size_m": 0.001)");
  const minitorch::nn::GPTConfig model = mz::model_config(static_cfg, 63);
  const mz::MemoryRun run = mz::memory_run_for(static_cfg, model, 1);
  ASSERT_TRUE(run.gemini);
  const double psi = run.psi;
  EXPECT_DOUBLE_EQ(mz::device_model_state_bytes(run), 16 * psi / 4);  // the defaults keep everything on the device
  minitorch::MemoryStats in_use;
  in_use.current_bytes[static_cast<int>(minitorch::MemTag::activation)] = 1 << 20;
  in_use.current_total = 1 << 20;
  const std::string msg =
      mz::explain_out_of_memory({minitorch::Device::sim(), minitorch::MemTag::activation, 65536, 2 << 20, in_use}, run);
  for (const std::string& part :
       {std::string("this run: Gemini, placement \"static\" (offload_optim_frac 0, offload_param_frac 0), f32"),
        "model states on the device about " + mz::format_mib(16 * psi / 4),
        "gemini.offload_optim_frac 1.0 (the optimizer states on the host): (P+G)Ψ/N = " + mz::format_mib(8 * psi / 4),
        "offload_param_frac 1.0 (every shard on the host, copied up at each gather): GΨ/N + the chunks being computed = " +
            mz::format_mib(4 * psi / 4),
        std::string("gemini.placement_policy \"auto\""), std::string("activations of this run, micro-batch 4")})
    EXPECT_TRUE(contains(msg, part)) << "missing '" << part << "' in:\n" << msg;
  EXPECT_FALSE(contains(msg, "ZeRO-2")) << msg;  // ZeRO's stage levers are not Gemini's

  const mz::Config auto_cfg = config(R"("placement_policy": "auto", "min_chunk_size_m": 0.001)");
  const mz::MemoryRun auto_run = mz::memory_run_for(auto_cfg, model, 1);
  EXPECT_DOUBLE_EQ(mz::device_model_state_bytes(auto_run), 4 * psi / 4);
  EXPECT_NO_THROW(mz::check_model_states_fit(auto_run, minitorch::Device::sim(), static_cast<std::int64_t>(4 * psi / 4) + 1))
      << "auto's shards live on the host: only the gradient shard must fit before the first step";
  EXPECT_THROW(mz::check_model_states_fit(run, minitorch::Device::sim(), static_cast<std::int64_t>(4 * psi / 4) + 1),
               mz::OutOfMemoryError);
}
