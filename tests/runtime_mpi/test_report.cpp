// The run report on N ranks (docs/design.md §9): its DDP numbers equal the formulas to the byte — model
// states (P+G+K)Ψ from the allocator, 2(N−1)/N·Ψ elements all-reduced in the last step — in fp32,
// bf16 and fp16 (bf16's layout), and rank 0 writes one file with every rank's part.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dist/process_group.h"
#include "test_util.h"
#include "train_util.h"
#include "runtime/report.h"
#include "zero/stage0.h"
#include "zero/stage1.h"
#include "zero/bucket_reducer.h"
#include "zero/stage2.h"

using namespace minitorch;

namespace {
enum class Prec { f32, bf16, f16 };
bool mixed(Prec p) { return p != Prec::f32; }
const char* dtype_of(Prec p) { return p == Prec::f32 ? "f32" : p == Prec::bf16 ? "bf16" : "f16"; }

// Every parameter size is a multiple of C = 32, so Ψ and every bucket divide by N = 2 and 4. fp16
// with a static scale: no step of these three overflows, so AdamW's states exist at the last one.
std::string config_json(Prec prec, int stage = 0) {
  const bool bf16 = prec == Prec::bf16;
  return std::string(R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "zero_optimization": {"stage": )") + std::to_string(stage) + R"(, "reduce_bucket_size": 3000},
    "bf16": {"enabled": )" + (bf16 ? "true" : "false") + R"(},)" +
         (prec == Prec::f16 ? R"( "fp16": {"enabled": true, "loss_scale": 1024},)" : "") + R"(
    "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16},
    "training": {"steps": 3, "seed": 5}})";
}

/// Trains 3 steps with a report attached; rank 0 returns the parsed file.
/// `reduce_scatters`: stage 2's per micro-step (a bucket bigger than reduce_bucket_size, a tensor of its own, is
/// reduced in chunks: zero/bucket_reducer.h).
nlohmann::json run_and_report(Prec prec, std::int64_t* psi, std::size_t* buckets, int stage = 0,
                              std::int64_t* reduce_scatters = nullptr) {
  auto& world = dist::world();
  reset_peak_memory();
  mt_test::TrainRun run(config_json(prec, stage), &world);
  *psi = run.psi();
  if (stage == 0) *buckets = run.engine->strategy_as<zero::Stage0>()->ddp()->buckets().size();
  if (stage == 1) *buckets = run.engine->strategy_as<zero::Stage1>()->partition().buckets().size();
  if (stage == 2) *buckets = run.engine->strategy_as<zero::Stage2>()->partition().buckets().size();
  if (stage == 2 && reduce_scatters)
    for (const zero::ShardedBucket& b : run.engine->strategy_as<zero::Stage2>()->partition().buckets())
      *reduce_scatters += zero::ShardReduction::chunks(b.numel, world.size(), run.cfg.zero.reduce_bucket_size);
  runtime::RunReport report(*run.engine, &world);
  {
    events::Attach listen(report);
    for (std::int64_t s = 1; s <= 3; ++s) {
      float loss = run.engine->train_batch(*run.sampler);
      report.add_step(s, loss, run.engine->lr(), run.engine->last_grad_norm(), 1.0);
    }
    report.add_val(3, 2.5f);
  }
  // One file name for the job: rank 0's pid.
  Tensor pid = Tensor::from_ints({static_cast<std::int32_t>(::getpid())}, {1});
  world.broadcast(pid, 0);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("minitorch_report_" + std::to_string(pid.to_int_vector()[0]) + ".json")).string();
  const std::int64_t bytes_before = world.stats().bytes;
  report.write(path);
  EXPECT_EQ(world.stats().bytes, bytes_before) << "gathering the report is bookkeeping, not step traffic";
  nlohmann::json j;
  if (world.rank() == 0) {
    j = nlohmann::json::parse(std::ifstream(path));
    std::filesystem::remove(path);
  }
  world.barrier();
  return j;
}

void expect_formulas(Prec prec) {
  auto& world = dist::world();
  std::int64_t psi = 0;
  std::size_t buckets = 0;
  nlohmann::json j = run_and_report(prec, &psi, &buckets);
  if (world.rank() != 0) return;
  const std::int64_t N = world.size(), P = mixed(prec) ? 2 : 4, G = P, K = mixed(prec) ? 12 : 8;
  ASSERT_EQ(psi % N, 0);
  EXPECT_EQ(j["format"], "minitorch-report-1");
  EXPECT_EQ(j["world_size"], N);
  EXPECT_EQ(j["data_parallel_size"], N);
  EXPECT_EQ(j["zero_stage"], 0);
  EXPECT_EQ(j["dtype"], dtype_of(prec));
  EXPECT_EQ(j["loss_scale"]["current"], prec == Prec::f16 ? 1024.0 : 1.0);
  EXPECT_EQ(j["loss_scale"]["skipped_steps"], 0);
  EXPECT_EQ(j["num_parameters"], psi);
  EXPECT_EQ(j["steps"].size(), 3u);
  EXPECT_EQ(j["val"][0]["step"], 3);
  EXPECT_EQ(j["activation_checkpointing"], false);
  EXPECT_EQ(j["offload"]["optimizer"], "none");
  const auto& f = j["formulas"];
  EXPECT_EQ(f["model_states"]["param"].get<double>(), static_cast<double>(P * psi));
  EXPECT_EQ(f["model_states"]["optim"].get<double>(), static_cast<double>(K * psi));
  EXPECT_EQ(f["comm_elements_per_step"].get<double>(), static_cast<double>(2 * (N - 1) * psi / N));
  ASSERT_EQ(j["ranks"].size(), static_cast<std::size_t>(N));
  for (std::int64_t r = 0; r < N; ++r) {
    const auto& rk = j["ranks"][static_cast<std::size_t>(r)];
    EXPECT_EQ(rk["rank"], r);
    // Measured by the allocator at the last step: exactly (P + G + K)Ψ, as the formula says.
    EXPECT_EQ(rk["model_states"]["param"], P * psi) << "rank " << r;
    EXPECT_EQ(rk["model_states"]["grad"], G * psi) << "rank " << r;
    EXPECT_EQ(rk["model_states"]["optim"], K * psi) << "rank " << r;
    EXPECT_EQ(rk["model_states"]["param"].get<double>() + rk["model_states"]["grad"].get<double>() +
                  rk["model_states"]["optim"].get<double>(),
              f["model_states"]["total"].get<double>());
    // DDP's only other memory: its f32 buckets (no padding here: every bucket divides by N).
    EXPECT_EQ(rk["memory"]["comm"]["current"], 4 * psi) << "rank " << r;
    const auto& ar = rk["comm_last_step"]["all_reduce"];
    EXPECT_EQ(ar["elements"].get<double>(), f["comm_elements_per_step"].get<double>()) << "rank " << r;
    EXPECT_EQ(ar["bytes"].get<double>(), f["comm_bytes_per_step"].get<double>()) << "rank " << r;
    EXPECT_EQ(ar["calls"], buckets) << "one all-reduce per bucket, at the boundary micro-step only";
    EXPECT_EQ(rk["comm_last_step"]["reduce_scatter"]["calls"], 0);
    EXPECT_EQ(rk["comm_last_step"]["broadcast"]["calls"], 0) << "the initial broadcast is not step traffic";
  }
}
}  // namespace

TEST(L05_RunReport, DdpNumbersEqualTheFormulasInFp32) { expect_formulas(Prec::f32); }

TEST(L05_RunReport, DdpNumbersEqualTheFormulasInBf16) { expect_formulas(Prec::bf16); }

TEST(L06_RunReport, DdpNumbersEqualTheFormulasInFp16) { expect_formulas(Prec::f16); }

namespace {
// ZeRO-1 and -2: every bucket divides by N here (sizes are multiples of 32), so there is no padding
// and the measured model states are the paper's formulas exactly; the traffic is one reduce-scatter
// per bucket at the boundary (stage 1) or per micro-step (stage 2: in chunks for a bucket bigger than
// reduce_bucket_size), one all-gather per bucket, and the norm's scalar.
void expect_zero_formulas(int stage, Prec prec) {
  auto& world = dist::world();
  std::int64_t psi = 0, reduce_scatters = 0;
  std::size_t buckets = 0;
  nlohmann::json j = run_and_report(prec, &psi, &buckets, stage, &reduce_scatters);
  if (world.rank() != 0) return;
  const std::int64_t N = world.size(), P = mixed(prec) ? 2 : 4, G = P, K = mixed(prec) ? 12 : 8, micro_steps = 2;
  ASSERT_EQ(psi % N, 0);
  EXPECT_EQ(j["zero_stage"], stage);
  EXPECT_EQ(j["strategy"], stage == 1 ? "ZeRO-1" : "ZeRO-2");
  const auto& f = j["formulas"];
  const std::int64_t grad = stage == 1 ? G * psi : G * psi / N;
  EXPECT_EQ(f["model_states"]["param"].get<double>(), static_cast<double>(P * psi));
  EXPECT_EQ(f["model_states"]["grad"].get<double>(), static_cast<double>(grad));
  EXPECT_EQ(f["model_states"]["optim"].get<double>(), static_cast<double>(K * psi / N));
  const std::int64_t elements = (stage == 1 ? 2 : micro_steps + 1) * (N - 1) * psi / N;
  EXPECT_EQ(f["comm_elements_per_step"].get<double>(), static_cast<double>(elements));
  EXPECT_EQ(f["comm_bytes_per_step"].get<double>(), static_cast<double>(elements * P)) << "ZeRO moves its own dtype";
  for (std::int64_t r = 0; r < N; ++r) {
    const auto& rk = j["ranks"][static_cast<std::size_t>(r)];
    EXPECT_EQ(rk["model_states"]["param"], P * psi) << "rank " << r;
    EXPECT_EQ(rk["model_states"]["grad"], grad) << "rank " << r;
    EXPECT_EQ(rk["model_states"]["optim"], K * psi / N) << "rank " << r;
    const auto& c = rk["comm_last_step"];
    EXPECT_EQ(c["reduce_scatter"]["elements"].get<std::int64_t>() + c["all_gather"]["elements"].get<std::int64_t>(),
              elements) << "rank " << r;
    EXPECT_EQ(c["reduce_scatter"]["bytes"].get<std::int64_t>() + c["all_gather"]["bytes"].get<std::int64_t>(),
              elements * P) << "rank " << r;
    EXPECT_EQ(c["reduce_scatter"]["calls"], stage == 1 ? static_cast<std::int64_t>(buckets) : micro_steps * reduce_scatters);
    EXPECT_EQ(c["all_gather"]["calls"], buckets);
    EXPECT_EQ(c["all_reduce"]["calls"], 1) << "the global norm";
    EXPECT_EQ(rk["memory"]["comm"]["current"], 0) << "rank " << r << ": no comm buffer outlives the step";
  }
}
}  // namespace

TEST(L06_RunReport, Zero1NumbersEqualTheFormulasInFp32) { expect_zero_formulas(1, Prec::f32); }

TEST(L06_RunReport, Zero1NumbersEqualTheFormulasInBf16) { expect_zero_formulas(1, Prec::bf16); }

TEST(L06_RunReport, Zero2NumbersEqualTheFormulasInFp32) { expect_zero_formulas(2, Prec::f32); }

TEST(L06_RunReport, Zero2NumbersEqualTheFormulasInBf16) { expect_zero_formulas(2, Prec::bf16); }

TEST(L06_RunReport, Zero1NumbersEqualTheFormulasInFp16) { expect_zero_formulas(1, Prec::f16); }

TEST(L06_RunReport, Zero2NumbersEqualTheFormulasInFp16) { expect_zero_formulas(2, Prec::f16); }
