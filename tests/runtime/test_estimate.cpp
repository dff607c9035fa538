// The estimator's pure parts (runtime/estimate.h): parameter counts with suffixes, the paper's Table 1 cell
// by cell, offload placement, DeepSpeed's estimators against its documentation's worked example (to the
// byte, in GiB as it prints them), zero_init and the buffer factor, nodes x GPUs, the largest layer,
// exact bytes from a partition planned on shapes alone, and the classes of ranks that hold the same bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "minitorch/allocator.h"
#include "nn/gpt.h"
#include "test_util.h"
#include "runtime/config.h"
#include "runtime/estimate.h"
#include "runtime/rank_classes.h"

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
  // minitorch's ZeRO-Offload (docs/design.md §10): the device keeps the stage's parameters and gradients,
  // the host 16 bytes per owned element (master, m, v 12; the gradient staging G; the 16-bit copy 2).
  const Placement z1 = offload_placement(1, psi, n, b, Offload::optimizer);
  EXPECT_DOUBLE_EQ(z1.device.total(), (2 + 2) * psi);
  EXPECT_DOUBLE_EQ(offload_placement(2, psi, n, b, Offload::optimizer).device.total(), 2 * psi + 2 * psi / n);
  EXPECT_DOUBLE_EQ(offload_placement(3, psi, n, b, Offload::optimizer).device.total(), (2 + 2) * psi / n);
  for (int stage = 1; stage <= 3; ++stage) {  // the device's optimizer state is the host's 12Ψ/N now
    const Placement p = offload_placement(stage, psi, n, b, Offload::optimizer);
    EXPECT_DOUBLE_EQ(p.cpu.total(), 16 * psi / n);
    EXPECT_DOUBLE_EQ(p.device.total() + b.K * psi / n, model_state_bytes(stage, psi, n, b).total()) << "stage " << stage;
  }
  // offload_param with it (ZeRO-Infinity): the shards join the optimizer on the host, (P+G+K)Ψ/N = 16Ψ/N;
  // the device keeps the reduced gradient shards, GΨ/N.
  const Placement infinity = offload_placement(3, psi, n, b, Offload::param);
  EXPECT_DOUBLE_EQ(infinity.device.total(), b.G * psi / n);
  EXPECT_DOUBLE_EQ(infinity.device.param, 0);
  EXPECT_DOUBLE_EQ(infinity.cpu.total(), 16 * psi / n);
  EXPECT_DOUBLE_EQ(infinity.cpu.param, b.P * psi / n);
  EXPECT_FALSE(offload_placement(2, psi, n, b, Offload::param).valid);
}

TEST(L06_Estimate, DeepSpeedEstimatorsReproduceItsDocumentedT5Example) {
  // DeepSpeed's memory docs: t5-3b, 2851M parameters, 32M in the largest layer, 1 node of 8 GPUs,
  // printed as bytes / 2^30 ("GB", really GiB): ZeRO-2 5.31 per GPU with offload and 127.48 per CPU either
  // way; 15.93 per GPU without offload from the formula before v0.14.3; ZeRO-3 6.09 per GPU without offload.
  const double psi = 2851e6, layer = 32e6, gib = 1024.0 * 1024 * 1024;
  EXPECT_EQ(kGiB, gib);
  EXPECT_NEAR(deepspeed_zero2(psi, 8, 1, /*cpu_offload=*/true).gpu / gib, 5.31, 0.005);
  EXPECT_NEAR(deepspeed_zero2(psi, 8, 1, true).cpu / gib, 127.48, 0.05);
  EXPECT_NEAR(deepspeed_zero2(psi, 8, 1, false).cpu / gib, 127.48, 0.05);
  EXPECT_NEAR(deepspeed_zero2_gpu_before_v0_14_3(psi, 8) / gib, 15.93, 0.005);
  // Today's code (v0.14.3 on), to the byte: 2Ψ + int(18Ψ/8) = 5 702 000 000 + 6 414 750 000, printed 11.28.
  EXPECT_EQ(deepspeed_zero2(psi, 8, 1, false).gpu, 12'116'750'000.0);
  EXPECT_EQ(format_gib(deepspeed_zero2(psi, 8, 1, false).gpu), "11.28 GiB");
  // ZeRO-3: 4L + int(18Ψ/8) = 128 000 000 + 6 414 750 000, printed 6.09.
  EXPECT_EQ(deepspeed_zero3(psi, layer, 8, 1, false, false).gpu, 6'542'750'000.0);
  EXPECT_EQ(format_gib(deepspeed_zero3(psi, layer, 8, 1, false, false).gpu), "6.09 GiB");
  // The structure of the formulas, exactly.
  EXPECT_DOUBLE_EQ(deepspeed_zero2(1000, 4, 1, false).gpu, 2000 + 4500);
  EXPECT_DOUBLE_EQ(deepspeed_zero2(1000, 4, 2, true).cpu, 1000 * 32 * 1.5);  // max(4N, 16) with N = 8
  EXPECT_DOUBLE_EQ(deepspeed_zero3(1000, 10, 4, 1, true, false).gpu, 40 + 500);
  EXPECT_DOUBLE_EQ(deepspeed_zero3(1000, 10, 4, 2, true, true).gpu, 40);
  EXPECT_DOUBLE_EQ(deepspeed_zero3(1000, 10, 4, 2, true, true).cpu, 1000 * 18 / 2.0 * 1.5);
  EXPECT_DOUBLE_EQ(deepspeed_zero2(7, 3, 1, false).gpu, 14 + 42);  // ⌊18·7/3⌋ = 42
  EXPECT_DOUBLE_EQ(deepspeed_zero2(7, 4, 1, false).gpu, 14 + 31);  // ⌊31.5⌋
  // The CPU bytes are whole too, as DeepSpeed's int(): 18·1/4·1.5 = 6.75 -> 6.
  EXPECT_DOUBLE_EQ(deepspeed_zero3(1, 0, 1, 4, true, true).cpu, 6);
  EXPECT_DOUBLE_EQ(deepspeed_zero2(3, 1, 1, false, 1.25).cpu, 15);  // 4·3·1·1.25 = 15
  EXPECT_DOUBLE_EQ(deepspeed_zero2(1, 1, 1, false, 1.3).cpu, 5);    // 5.2 -> 5
}

TEST(L06_Estimate, DeepSpeedZeroInitAndBufferFactorChangeTheCpuAsItsFunctionsDo) {
  const double psi = 1000, layer = 10;
  const int gpn = 4;
  for (double f : {1.0, 1.5, 2.0, 3.25}) {
    SCOPED_TRACE("factor " + std::to_string(f));
    // No offload: each process loads the model (4Ψ per GPU) or with zero_init only its largest layer (4L).
    EXPECT_DOUBLE_EQ(deepspeed_zero3(psi, layer, gpn, 1, false, false, true, f).cpu, layer * 4 * gpn * f);
    EXPECT_DOUBLE_EQ(deepspeed_zero3(psi, layer, gpn, 1, false, false, false, f).cpu, psi * 4 * gpn * f);
    // Offload on 2 nodes: zero_init 16Ψ/nodes (18 with the parameters), else the larger of that and 4Ψ per GPU.
    EXPECT_DOUBLE_EQ(deepspeed_zero3(psi, layer, gpn, 2, true, false, true, f).cpu, psi * 16 / 2 * f);
    EXPECT_DOUBLE_EQ(deepspeed_zero3(psi, layer, gpn, 2, true, false, false, f).cpu, psi * 16 * f);  // 4·4 > 16/2
    EXPECT_DOUBLE_EQ(deepspeed_zero3(psi, layer, gpn, 2, true, true, true, f).cpu, psi * 18 / 2 * f);
    EXPECT_DOUBLE_EQ(deepspeed_zero3(psi, layer, 1, 1, true, true, false, f).cpu, psi * 18 * f);  // 18 > 4·1
    EXPECT_DOUBLE_EQ(deepspeed_zero2(psi, gpn, 1, false, f).cpu, psi * 4 * gpn * f);
    EXPECT_DOUBLE_EQ(deepspeed_zero2(psi, gpn, 1, true, f).cpu, psi * 16 * f);  // max(4·4, 16)
    // The GPU bytes know neither knob.
    EXPECT_DOUBLE_EQ(deepspeed_zero3(psi, layer, gpn, 1, false, false, false, f).gpu,
                     deepspeed_zero3(psi, layer, gpn, 1, false, false, true, 1.5).gpu);
  }
  EXPECT_TRUE(mt_test::contains(deepspeed_zero3(1, 1, 1, 1, false, false, true, 2).cpu_text, "·2"));
  EXPECT_TRUE(mt_test::contains(deepspeed_zero3(1, 1, 1, 1, false, false, false).cpu_text, "4Ψ"));
  EXPECT_TRUE(parse_zero_init("1"));
  EXPECT_FALSE(parse_zero_init("0"));
  EXPECT_DOUBLE_EQ(parse_buffer_factor("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(parse_buffer_factor("1"), 1.0);
  for (const char* bad : {"2", "", "yes", "true", "01"}) {
    const std::string err = mt_test::error_of([&] { parse_zero_init(bad); });
    EXPECT_TRUE(mt_test::contains(err, "--zero-init must be 0 or 1")) << "'" << bad << "': " << err;
  }
  for (const char* bad : {"0.5", "0", "-2", "abc", "", "nan", "inf", "1.5x"}) {
    const std::string err = mt_test::error_of([&] { parse_buffer_factor(bad); });
    EXPECT_TRUE(mt_test::contains(err, "--buffer-factor")) << "'" << bad << "': " << err;
  }
  EXPECT_THROW(parse_buffer_factor("0"), ConfigError);  // a usage error: exit 2 in the tool
}

TEST(L06_Estimate, DeepSpeedTopologyIsNodesOfGpusPerNodeAndNeverShrinksQuietly) {
  EXPECT_EQ(deepspeed_topology(8, std::nullopt).gpus_per_node, 8);
  EXPECT_EQ(deepspeed_topology(8, std::nullopt).nodes, 1);
  EXPECT_EQ(deepspeed_topology(16, 8).nodes, 2);
  EXPECT_EQ(deepspeed_topology(4, 4).nodes, 1);
  EXPECT_EQ(topology_text(deepspeed_topology(8, std::nullopt)), "1 node x 8 GPUs");
  EXPECT_EQ(topology_text(deepspeed_topology(16, 8)), "2 nodes x 8 GPUs");
  EXPECT_EQ(topology_text(deepspeed_topology(3, 1)), "3 nodes x 1 GPU");
  std::string err = mt_test::error_of([] { deepspeed_topology(4, 8); });
  EXPECT_TRUE(mt_test::contains(err, "--gpus-per-node 8 is more than --ranks 4")) << err;
  err = mt_test::error_of([] { deepspeed_topology(12, 8); });
  EXPECT_TRUE(mt_test::contains(err, "not a whole number of nodes")) << err;
  EXPECT_THROW(deepspeed_topology(4, 8), ConfigError);
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

namespace {
/// Rank r's piece elements per bucket: what its bytes depend on.
std::vector<std::int64_t> piece_sizes(const Partition& plan) {
  std::vector<std::int64_t> per_bucket(plan.buckets().size(), 0);
  for (const ShardPiece& piece : plan.pieces()) per_bucket[piece.bucket] += piece.range.size();
  return per_bucket;
}
}  // namespace

TEST(L06_Estimate, RankClassesGroupRanksWhosePiecesAreTheSame) {
  // minitorch-estimate --config plans one Partition per class instead of one per rank (2^24 ranks at most):
  // checked here against every rank, for bucket sizes that do and do not cut parameters and worlds that do
  // and do not divide the buckets.
  nn::GPTConfig g;
  g.n_layer = 2, g.n_head = 2, g.n_embd = 10, g.block_size = 6, g.vocab_size = 13;
  const nn::NamedTensors meta = meta_parameters(nn::GPT::parameter_shapes(g));
  for (std::int64_t bucket : {std::int64_t{0}, std::int64_t{300}, std::int64_t{1} << 30})
    for (int n : {1, 2, 3, 4, 7, 64, 1000, 5000}) {
      SCOPED_TRACE("bucket " + std::to_string(bucket) + ", N = " + std::to_string(n));
      const Partition first(meta, bucket, 0, n);
      const std::vector<RankSpan> spans = rank_classes({&first});
      ASSERT_FALSE(spans.empty());
      EXPECT_EQ(spans.front().first, 0);
      EXPECT_EQ(spans.back().last, n - 1);
      EXPECT_LE(spans.size(), 2 * first.buckets().size() + 1);
      for (std::size_t i = 0; i < spans.size(); ++i) {
        if (i > 0) {
          EXPECT_EQ(spans[i].first, spans[i - 1].last + 1) << "the classes leave no rank out";
        }
        const std::vector<std::int64_t> sizes = piece_sizes(Partition(meta, bucket, spans[i].first, n));
        for (int r = spans[i].first + 1; r <= spans[i].last; ++r)
          ASSERT_EQ(piece_sizes(Partition(meta, bucket, r, n)), sizes) << "rank " << r << " in " << spans[i].first
                                                                       << ".." << spans[i].last;
      }
    }
}
