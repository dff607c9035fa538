// The estimator's pure parts (runtime/estimate.h): parameter counts with suffixes, the paper's Table 1 cell
// by cell, offload placement, DeepSpeed's estimators against its documentation's worked example, the
// largest layer, and exact bytes from a partition planned on shapes alone.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "minitorch/allocator.h"
#include "nn/gpt.h"
#include "test_util.h"
#include "runtime/config.h"
#include "runtime/estimate.h"

using namespace minitorch;
using namespace minitorch::runtime;
using namespace minitorch::zero;

TEST(L06_Estimate, ParameterCountsTakeSuffixesAndExponents) {
  EXPECT_EQ(parse_parameter_count("124439808"), 124'439'808);
  EXPECT_EQ(parse_parameter_count("124M"), 124'000'000);
  EXPECT_EQ(parse_parameter_count("7.5B"), 7'500'000'000);
  EXPECT_EQ(parse_parameter_count("7.5e9"), 7'500'000'000);
  EXPECT_EQ(parse_parameter_count("7.5b"), 7'500'000'000);
  EXPECT_EQ(parse_parameter_count("1T"), 1'000'000'000'000);
  EXPECT_EQ(parse_parameter_count("128B"), 128'000'000'000);
  EXPECT_EQ(parse_parameter_count("2k"), 2000);
  for (const char* bad : {"abc", "", "B", "-5", "1.5", "0", "7.5X", "1e400", "nan", "inf", "12M3", "1e19", " 5"}) {
    const std::string err = mt_test::error_of([&] { parse_parameter_count(bad); });
    EXPECT_FALSE(err.empty()) << "'" << bad << "' was accepted";
    EXPECT_TRUE(mt_test::contains(err, std::string("'") + bad + "'")) << err;
  }
  EXPECT_THROW(parse_parameter_count("abc"), ConfigError);  // a usage error: exit 2 in the tool
  EXPECT_EQ(format_parameter_count(7'500'000'000), "7.5B");
  EXPECT_EQ(format_parameter_count(1'000'000'000'000), "1T");
  EXPECT_EQ(format_parameter_count(124'000'000), "124M");
  EXPECT_EQ(format_parameter_count(124'439'808), "124439808");
  EXPECT_EQ(format_parameter_count(999), "999");
}

TEST(L06_Estimate, EveryCellOfThePapersTable1) {
  const BytesPerParameter b = bytes_per_parameter(/*bf16=*/true);
  ASSERT_EQ(paper_table1().size(), 18u);
  for (const PaperTable1Row& row : paper_table1())
    for (int stage = 1; stage <= 3; ++stage) {
      const double gb = model_state_bytes(stage, row.psi, row.world, b).total() / 1e9;
      EXPECT_TRUE(agrees_with_printed(gb, row.gb[static_cast<std::size_t>(stage - 1)]))
          << "Ψ " << row.psi << ", N " << row.world << ", stage " << stage << ": " << gb << " GB, the paper prints "
          << row.gb[static_cast<std::size_t>(stage - 1)];
    }
  // The rule itself: within one unit of the last printed digit, no closer than that.
  EXPECT_TRUE(agrees_with_printed(4187.5, "4187"));
  EXPECT_TRUE(agrees_with_printed(0.1171875, "0.12"));
  EXPECT_FALSE(agrees_with_printed(31.5, "31.4"));
  EXPECT_FALSE(agrees_with_printed(4189, "4187"));
}

TEST(L06_Estimate, OffloadMovesTheShardsOptimizerStatesAndGradientsToTheCpu) {
  const BytesPerParameter b = bytes_per_parameter(true);
  const double psi = 1000;
  const int n = 4;
  for (int stage = 0; stage <= 3; ++stage) {  // no offload: everything on the device, the formula
    const Placement p = offload_placement(stage, psi, n, b, Offload::none);
    EXPECT_DOUBLE_EQ(p.device.total(), model_state_bytes(stage, psi, n, b).total());
    EXPECT_DOUBLE_EQ(p.cpu.total(), 0);
  }
  EXPECT_FALSE(offload_placement(0, psi, n, b, Offload::optimizer).valid);
  EXPECT_TRUE(mt_test::contains(offload_placement(0, psi, n, b, Offload::optimizer).why, "stage 1, 2 or 3"));
  // ZeRO-1: the device drops KΨ/N and keeps the full gradients for the reduce-scatter.
  const Placement z1 = offload_placement(1, psi, n, b, Offload::optimizer);
  EXPECT_DOUBLE_EQ(z1.device.total(), (2 + 2) * psi);
  EXPECT_DOUBLE_EQ(z1.cpu.total(), (2 + 12) * psi / n);
  // ZeRO-2 and -3: the device keeps only parameters (ZeRO-Offload's 2Ψ; 2Ψ/N at stage 3).
  EXPECT_DOUBLE_EQ(offload_placement(2, psi, n, b, Offload::optimizer).device.total(), 2 * psi);
  EXPECT_DOUBLE_EQ(offload_placement(3, psi, n, b, Offload::optimizer).device.total(), 2 * psi / n);
  for (int stage = 1; stage <= 3; ++stage) {  // nothing is lost: device + CPU = the stage's formula
    const Placement p = offload_placement(stage, psi, n, b, Offload::optimizer);
    EXPECT_DOUBLE_EQ(p.device.total() + p.cpu.total() - (stage == 1 ? 2 * psi / n : 0),
                     model_state_bytes(stage, psi, n, b).total())
        << "stage " << stage << " (stage 1 holds its reduced shard twice: in the full gradients and on the CPU)";
  }
  const Placement infinity = offload_placement(3, psi, n, b, Offload::param);
  EXPECT_DOUBLE_EQ(infinity.device.total(), 0);
  EXPECT_DOUBLE_EQ(infinity.cpu.total(), 16 * psi / n);
  EXPECT_FALSE(offload_placement(2, psi, n, b, Offload::param).valid);
}

TEST(L06_Estimate, DeepSpeedEstimatorsReproduceItsDocumentedT5Example) {
  // DeepSpeed's memory docs: t5-3b, 2851M parameters, 32M in the largest layer, 1 node of 8 GPUs,
  // printed as bytes / 2^30 ("GB"): ZeRO-2 5.31 per GPU with offload and 127.48 per CPU either way;
  // 15.93 per GPU without offload from the formula before 2024; ZeRO-3 6.09 per GPU without offload.
  const double psi = 2851e6, layer = 32e6, gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(deepspeed_zero2(psi, 8, 1, /*cpu_offload=*/true).gpu / gib, 5.31, 0.005);
  EXPECT_NEAR(deepspeed_zero2(psi, 8, 1, true).cpu / gib, 127.48, 0.05);
  EXPECT_NEAR(deepspeed_zero2(psi, 8, 1, false).cpu / gib, 127.48, 0.05);
  EXPECT_NEAR(deepspeed_zero2_gpu_before_fix(psi, 8) / gib, 15.93, 0.005);
  EXPECT_NEAR(deepspeed_zero2(psi, 8, 1, false).gpu / gib, 11.28, 0.005);  // 2Ψ + 18Ψ/N, today's code
  EXPECT_NEAR(deepspeed_zero3(psi, layer, 8, 1, false, false).gpu / gib, 6.09, 0.005);
  // The structure of the formulas, exactly.
  EXPECT_DOUBLE_EQ(deepspeed_zero2(1000, 4, 1, false).gpu, 2000 + 4500);
  EXPECT_DOUBLE_EQ(deepspeed_zero2(1000, 4, 2, true).cpu, 1000 * 32 * 1.5);  // max(4N, 16) with N = 8
  EXPECT_DOUBLE_EQ(deepspeed_zero3(1000, 10, 4, 1, true, false).gpu, 40 + 500);
  EXPECT_DOUBLE_EQ(deepspeed_zero3(1000, 10, 4, 2, true, true).gpu, 40);
  EXPECT_DOUBLE_EQ(deepspeed_zero3(1000, 10, 4, 2, true, true).cpu, 1000 * 18 / 2.0 * 1.5);
  EXPECT_DOUBLE_EQ(deepspeed_zero3(1000, 10, 4, 1, false, false).cpu, 10 * 4 * 4 * 1.5);  // zero_init: the layer only
  EXPECT_DOUBLE_EQ(deepspeed_zero3(1000, 10, 4, 1, false, false, /*zero_init=*/false).cpu, 1000 * 4 * 4 * 1.5);
  EXPECT_DOUBLE_EQ(deepspeed_zero2(7, 3, 1, false).gpu, 14 + 42);  // ⌊18·7/3⌋ = 42
  EXPECT_DOUBLE_EQ(deepspeed_zero2(7, 4, 1, false).gpu, 14 + 31);  // ⌊31.5⌋
}

TEST(L06_Estimate, LargestLayerIsTheModuleHoldingTheMostElementsItself) {
  nn::GPTConfig g;
  g.n_layer = 2, g.n_head = 2, g.n_embd = 16, g.block_size = 8, g.vocab_size = 10;
  // wte 10·16 = 160 < c_fc 4·16·16 + 64 = 1088 (the block's MLP holds its children's, not its own)
  const auto [n, name] = largest_layer(nn::GPT::parameter_shapes(g));
  EXPECT_EQ(n, 1088);
  EXPECT_EQ(name, "transformer.h.0.mlp.c_fc");
  g.vocab_size = 100;  // wte 1600 > 1088
  EXPECT_EQ(largest_layer(nn::GPT::parameter_shapes(g)).second, "transformer.wte");
}

TEST(L06_Estimate, ExactBytesFromAPartitionPlannedOnShapesAlone) {
  nn::GPTConfig g;
  g.n_layer = 1, g.n_head = 2, g.n_embd = 10, g.block_size = 6, g.vocab_size = 13;
  const auto shapes = nn::GPT::parameter_shapes(g);
  const std::int64_t before = memory_stats().current_total;
  const nn::NamedTensors meta = meta_parameters(shapes);
  EXPECT_LE(memory_stats().current_total - before, 64) << "meta parameters share one element";
  const std::int64_t psi = g.num_parameters();
  const BytesPerParameter b = bytes_per_parameter(false);
  const int n = 4;
  std::int64_t optim = 0;
  for (int r = 0; r < n; ++r) {
    const Partition plan(meta, /*bucket_elements=*/300, r, n);
    EXPECT_EQ(plan.numel(), psi);
    EXPECT_GT(plan.padding(), 0) << "the sizes were chosen so that buckets do not divide by 4";
    const ModelStateBytes s0 = exact_model_states(0, plan, b), s1 = exact_model_states(1, plan, b),
                          s2 = exact_model_states(2, plan, b);
    EXPECT_EQ(s0.total(), 16 * psi);
    EXPECT_EQ(s1.param, 4 * (psi + plan.padding()));
    EXPECT_EQ(s1.grad, 4 * (psi + plan.padding()));
    EXPECT_EQ(s2.grad, 4 * (psi + plan.padding()) / n);
    EXPECT_EQ(s1.optim, s2.optim);
    optim += s1.optim;
  }
  EXPECT_EQ(optim, 8 * psi) << "the ranks' optimizer states add up to KΨ: padding has none";
  const Partition one(meta, 300, 0, 1);  // one rank: no partition, whatever the stage
  EXPECT_EQ(exact_model_states(2, one, b).total(), 16 * psi);
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([&] { exact_model_states(4, one, b); }), "stage 4"));
}
