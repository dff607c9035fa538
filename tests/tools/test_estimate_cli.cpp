// `minitorch-estimate`: the ZeRO paper's Table 1 cell by cell, parameter counts with suffixes, offload
// split into device and CPU bytes, DeepSpeed's estimators beside the paper's, one clear error (exit 2)
// for bad input, and — the point of it — a config's prediction equal to the bytes real runs of that
// config measure on 2 and 4 ranks, rank by rank, for stages 0, 1, 2 and 3.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/formulas.h"
#include "test_util.h"

using mt_test::bin;
using mt_test::run_command;
using testing::HasSubstr;
using testing::Not;

namespace {
nlohmann::json run_json(const std::string& args) {
  auto r = run_command(bin("minitorch-estimate") + " " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? nlohmann::json::parse(r.output) : nlohmann::json();
}

/// The row for (Ψ, N) and its entry for `stage`.
const nlohmann::json& cell(const nlohmann::json& j, std::int64_t psi, int n, int stage) {
  for (const auto& row : j["rows"])
    if (row["params"] == psi && row["ranks"] == n)
      for (const auto& st : row["stages"])
        if (st["stage"] == stage) return st;
  static const nlohmann::json none;
  ADD_FAILURE() << "no cell for Ψ " << psi << ", N " << n << ", stage " << stage;
  return none;
}

/// The entry of a --config estimate's `exact` runs that holds rank r.
const nlohmann::json& at_rank(const nlohmann::json& runs, int r) {
  for (const auto& run : runs)
    if (run["first_rank"] <= r && r <= run["last_rank"]) return run;
  static const nlohmann::json none;
  ADD_FAILURE() << "no run holds rank " << r << ": " << runs.dump();
  return none;
}

void expect_usage_error(const std::string& args, const std::string& needle) {
  auto r = run_command(bin("minitorch-estimate") + " " + args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << args << "\n" << r.output;
  EXPECT_THAT(r.output, HasSubstr(needle)) << args;
}
}  // namespace

TEST(L06_EstimateCli, Table1CellsAreThePapers) {
  const nlohmann::json j = run_json("--table1");
  EXPECT_EQ(j["rows"].size(), 18u);
  EXPECT_EQ(j["bytes_per_parameter"]["K"], 12);
  // The paper's Table 1 (GB): 7.5B at N = 64 is 31.4 / 16.6 / 1.88, and 120 without ZeRO.
  const std::int64_t b7 = 7'500'000'000, b128 = 128'000'000'000, t1 = 1'000'000'000'000;
  EXPECT_DOUBLE_EQ(cell(j, b7, 64, 0)["gb"], 120.0);
  EXPECT_NEAR(cell(j, b7, 64, 1)["gb"], 31.4, 0.05);
  EXPECT_NEAR(cell(j, b7, 64, 2)["gb"], 16.6, 0.05);
  EXPECT_NEAR(cell(j, b7, 64, 3)["gb"], 1.88, 0.005);
  EXPECT_EQ(cell(j, b7, 64, 3)["device"]["total"], 1.875e9) << "16Ψ/N, exactly";
  for (int s = 0; s <= 3; ++s) EXPECT_DOUBLE_EQ(cell(j, b7, 1, s)["gb"], 120.0) << "one rank keeps everything";
  EXPECT_NEAR(cell(j, b7, 4, 1)["gb"], 52.5, 0.05);
  EXPECT_NEAR(cell(j, b7, 4, 2)["gb"], 41.3, 0.05);
  EXPECT_NEAR(cell(j, b7, 16, 2)["gb"], 21.6, 0.05);
  EXPECT_DOUBLE_EQ(cell(j, b128, 1024, 0)["gb"], 2048.0);
  EXPECT_DOUBLE_EQ(cell(j, b128, 1024, 1)["gb"], 513.5);  // printed 513
  EXPECT_DOUBLE_EQ(cell(j, b128, 1024, 3)["gb"], 2.0);
  EXPECT_DOUBLE_EQ(cell(j, b128, 64, 3)["gb"], 32.0);
  EXPECT_DOUBLE_EQ(cell(j, t1, 1024, 3)["gb"], 15.625);   // printed 15.6
  EXPECT_DOUBLE_EQ(cell(j, t1, 4, 2)["gb"], 5500.0);
  for (const auto& row : j["rows"])
    for (const auto& st : row["stages"])
      if (st["stage"] != 0) {
        EXPECT_TRUE(st["agrees_with_paper"].get<bool>()) << row.dump();
      }

  auto text = run_command(bin("minitorch-estimate") + " --table1");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("31.4062 GB [31.4]"));
  EXPECT_THAT(text.output, HasSubstr("1.875 GB [1.88]"));
  EXPECT_THAT(text.output, HasSubstr("(P+G)Ψ + KΨ/N")) << "each column carries its formula";
  EXPECT_THAT(text.output, HasSubstr("PΨ + (G+K)Ψ/N"));
}

TEST(L06_EstimateCli, ParamsTakeSuffixesListsAndOneStage) {
  const nlohmann::json j = run_json("--params 124M,7.5e9,1T,124439808 --ranks 1,8");
  ASSERT_EQ(j["rows"].size(), 8u);
  EXPECT_EQ(j["rows"][0]["params"], 124'000'000);
  EXPECT_EQ(j["rows"][2]["params"], 7'500'000'000);
  EXPECT_EQ(j["rows"][4]["params"], 1'000'000'000'000);
  EXPECT_EQ(j["rows"][6]["params"], 124'439'808);
  EXPECT_EQ(j["rows"][3]["ranks"], 8);
  EXPECT_EQ(cell(j, 124'000'000, 8, 2)["formula"], "PΨ + (G+K)Ψ/N");
  EXPECT_DOUBLE_EQ(cell(j, 124'000'000, 8, 2)["device"]["total"], 2 * 124e6 + 14 * 124e6 / 8);

  const nlohmann::json one = run_json("--params 7.5B --ranks 64 --stage 1 --fp32");
  ASSERT_EQ(one["rows"][0]["stages"].size(), 1u);
  EXPECT_EQ(one["rows"][0]["stages"][0]["name"], "ZeRO-1");
  EXPECT_EQ(one["bytes_per_parameter"]["K"], 8);
  EXPECT_DOUBLE_EQ(one["rows"][0]["stages"][0]["device"]["total"], 8 * 7.5e9 + 8 * 7.5e9 / 64);
}

TEST(L06_EstimateCli, OffloadSplitsDeviceAndCpuAsTheRunsMeasureThem) {
  auto r = run_command(bin("minitorch-estimate") + " --params 7.5B --ranks 64 --offload optimizer");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("(offload as minitorch runs it, docs/design.md §10"));
  EXPECT_THAT(r.output, Not(HasSubstr("not implemented")));
  EXPECT_THAT(r.output, HasSubstr("device"));
  EXPECT_THAT(r.output, HasSubstr("CPU"));
  EXPECT_THAT(r.output, HasSubstr("n/a: offload_optimizer needs ZeRO stage 1, 2 or 3"));
  const nlohmann::json j = run_json("--params 7.5B --ranks 64 --offload optimizer");
  EXPECT_TRUE(mt_test::contains(j["note"].get<std::string>(), "offload as minitorch runs it"));
  const std::int64_t psi = 7'500'000'000;
  EXPECT_FALSE(cell(j, psi, 64, 0)["valid"].get<bool>());
  EXPECT_DOUBLE_EQ(cell(j, psi, 64, 1)["device"]["total"], 4 * 7.5e9);   // drops KΨ/N, keeps the full gradients
  EXPECT_DOUBLE_EQ(cell(j, psi, 64, 2)["device"]["total"], 2 * 7.5e9 + 2 * 7.5e9 / 64);  // PΨ + GΨ/N
  EXPECT_DOUBLE_EQ(cell(j, psi, 64, 2)["cpu"]["total"], 16 * 7.5e9 / 64);
  const nlohmann::json inf = run_json("--params 7.5B --ranks 64 --offload param --stage 3 --largest-layer 100M");
  // offload_param with offload_optimizer, as minitorch runs it: the device keeps the gradient shards, GΨ/N.
  EXPECT_DOUBLE_EQ(cell(inf, psi, 64, 3)["device"]["total"], 2 * 7.5e9 / 64);
  EXPECT_DOUBLE_EQ(cell(inf, psi, 64, 3)["device"]["param"], 0);
  EXPECT_DOUBLE_EQ(cell(inf, psi, 64, 3)["cpu"]["total"], 16 * 7.5e9 / 64);
}

TEST(L11_EstimateCli, NvmeSplitsDeviceCpuAndDiskAsRuntimeNvmeStateBytes) {
  // ZeRO-Infinity on 1T parameters over 512 ranks: the optimizer on NVMe (parameters on the device, or on the CPU),
  // then both on NVMe — each cell runtime::nvme_state_bytes's, per pool.
  const std::int64_t psi = 1'000'000'000'000;
  const double shard = 1e12 / 512;
  auto r = run_command(bin("minitorch-estimate") + " --params 1T --ranks 512 --offload param --nvme all --stage 3 --largest-layer 1B");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("on NVMe"));
  EXPECT_THAT(r.output, HasSubstr("(P+12)Ψ/N"));
  EXPECT_THAT(r.output, HasSubstr("its estimators know no NVMe"));
  const nlohmann::json all = run_json("--params 1T --ranks 512 --offload param --nvme all");
  EXPECT_EQ(all["nvme"], "all");
  EXPECT_DOUBLE_EQ(cell(all, psi, 512, 3)["device"]["total"], 2 * shard) << "GΨ/N";
  EXPECT_DOUBLE_EQ(cell(all, psi, 512, 3)["cpu"]["total"], 0) << "the step's tiles only";
  EXPECT_DOUBLE_EQ(cell(all, psi, 512, 3)["disk"]["optim"], 12 * shard);
  EXPECT_DOUBLE_EQ(cell(all, psi, 512, 3)["disk"]["param"], 2 * shard);
  EXPECT_EQ(cell(all, psi, 512, 3)["disk_formula"], "(P+12)Ψ/N");
  EXPECT_FALSE(cell(all, psi, 512, 2)["valid"].get<bool>()) << "NVMe is stage 3's";
  const nlohmann::json opt = run_json("--params 1T --ranks 512 --offload optimizer --nvme optimizer --fp32");
  EXPECT_DOUBLE_EQ(cell(opt, psi, 512, 3)["device"]["total"], 8 * shard) << "(P+G)Ψ/N in fp32";
  EXPECT_DOUBLE_EQ(cell(opt, psi, 512, 3)["disk"]["total"], 12 * shard) << "master, m, v in f32: 12 in either precision";
  const nlohmann::json host = run_json("--params 1T --ranks 512 --offload param --nvme optimizer");
  EXPECT_DOUBLE_EQ(cell(host, psi, 512, 3)["cpu"]["param"], 2 * shard) << "the shards on the CPU, the optimizer on NVMe";
  namespace rt = minitorch::runtime;
  const rt::NvmeEstimate f = rt::nvme_state_bytes(1e12, 512, rt::bytes_per_parameter(true), 1, "cpu", 0, 1);
  EXPECT_DOUBLE_EQ(cell(host, psi, 512, 3)["disk"]["total"], f.disk.param + f.disk.grad + f.disk.optim);
  EXPECT_DOUBLE_EQ(cell(host, psi, 512, 3)["device"]["total"], f.device.param + f.device.grad + f.device.optim);
  // Without offload, with --offload optimizer and --nvme all, with --config: one error each, naming the fix.
  expect_usage_error("--params 1T --ranks 512 --nvme optimizer", "give --offload optimizer or --offload param too");
  expect_usage_error("--params 1T --ranks 512 --offload optimizer --nvme all", "give --offload param");
  expect_usage_error("--params 1T --ranks 512 --offload param --nvme disk", "--nvme must be 'optimizer' or 'all'");
  expect_usage_error("--table1 --offload param --nvme all", "drop --fp32/--offload/--nvme");
}

TEST(L06_EstimateCli, DeepSpeedsEstimatesStandBesideThePapersWithWhyTheyDiffer) {
  auto r = run_command(bin("minitorch-estimate") + " --params 7.5B --ranks 64 --largest-layer 100M");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2Ψ + 18Ψ/N"));
  EXPECT_THAT(r.output, HasSubstr("4L + 18Ψ/N"));
  EXPECT_THAT(r.output, HasSubstr("4Ψ + 16Ψ/N"));
  EXPECT_THAT(r.output, HasSubstr("15.93 GiB")) << "(2·7.5e9 + 18·7.5e9/64) / 2^30";
  EXPECT_THAT(r.output, HasSubstr("1 node x 64 GPUs"));
  EXPECT_THAT(r.output, HasSubstr("Why they differ"));
  EXPECT_THAT(r.output, HasSubstr("fp32 copy of\n    the gradients"));
  EXPECT_THAT(r.output, HasSubstr("Before DeepSpeed v0.14.3 (June 2024, commit f4cb866c2, PR #5099"));
  EXPECT_THAT(r.output, Not(HasSubstr("before 2024")));
  const nlohmann::json j = run_json("--params 7.5B --ranks 64 --largest-layer 100M --gpus-per-node 8");
  const auto& ds = j["rows"][0]["deepspeed"];
  EXPECT_EQ(ds["nodes"], 8);
  EXPECT_EQ(ds["topology"], "8 nodes x 8 GPUs");
  EXPECT_EQ(ds["zero2"]["gpu"], 2 * 7'500'000'000LL + 18 * 7'500'000'000LL / 64);
  EXPECT_EQ(ds["zero2"]["gpu_before_v0_14_3"], 4 * 7'500'000'000LL + 16 * 7'500'000'000LL / 64);
  EXPECT_EQ(ds["zero2"]["cpu"], 4 * 7'500'000'000LL * 8 * 3 / 2);
  EXPECT_EQ(ds["zero3"]["gpu"], 4 * 100'000'000LL + 18 * 7'500'000'000LL / 64);
}

TEST(L06_EstimateCli, DeepSpeedRowsAreInGibAsItPrintsThemWithExactBytesInJson) {
  // DeepSpeed's worked example, t5-3b: 2851M parameters, a 32M largest layer, 1 node of 8 GPUs.
  const std::int64_t psi = 2'851'000'000, layer = 32'000'000;
  const std::int64_t z2 = 2 * psi + 18 * psi / 8, z3 = 4 * layer + 18 * psi / 8;  // int(18Ψ/N): 18Ψ divides by 8
  const double gib = 1024.0 * 1024 * 1024;
  auto r = run_command(bin("minitorch-estimate") + " --params 2851M --ranks 8 --largest-layer 32M");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("11.28 GiB")) << z2 / gib;
  EXPECT_THAT(r.output, HasSubstr("6.09 GiB")) << z3 / gib;
  EXPECT_THAT(r.output, HasSubstr("1 node x 8 GPUs"));
  EXPECT_THAT(r.output, HasSubstr("DeepSpeed prints these numbers as \"GB\""));
  EXPECT_THAT(r.output, HasSubstr("the number DeepSpeed prints and calls \"GB\""));
  EXPECT_THAT(r.output, HasSubstr("45.616 GB")) << "the paper's rows stay in GB = 1e9: 16Ψ";
  const std::string ds_table = r.output.substr(r.output.find("DeepSpeed's own estimates"));
  EXPECT_THAT(ds_table.substr(0, ds_table.find("\n\n")), Not(HasSubstr(" GB "))) << "every DeepSpeed cell in GiB";

  const nlohmann::json j = run_json("--params 2851M --ranks 8 --largest-layer 32M");
  EXPECT_EQ(j["gib"], gib);
  const auto& ds = j["rows"][0]["deepspeed"];
  ASSERT_TRUE(ds["zero2"]["gpu"].is_number_integer()) << ds.dump();
  EXPECT_EQ(ds["zero2"]["gpu"].get<std::int64_t>(), z2);
  EXPECT_EQ(ds["zero2"]["gpu"].get<std::int64_t>(), 12'116'750'000);
  EXPECT_EQ(ds["zero3"]["gpu"].get<std::int64_t>(), z3);
  EXPECT_EQ(ds["zero3"]["gpu"].get<std::int64_t>(), 6'542'750'000);
  EXPECT_EQ(ds["zero3"]["cpu"].get<std::int64_t>(), layer * 4 * 8 * 3 / 2) << "zero_init: the largest layer per GPU";
  EXPECT_DOUBLE_EQ(ds["zero2"]["gpu_gib"].get<double>(), z2 / gib);
  EXPECT_EQ(ds["zero_init"], true);
  EXPECT_EQ(ds["buffer_factor"], 1.5);
  EXPECT_EQ(ds["largest_layer"], layer);
}

TEST(L06_EstimateCli, ZeroInitAndBufferFactorChangeTheRowsAsDeepSpeedsFunctions) {
  const std::int64_t psi = 1'000'000, layer = 10'000;
  const auto ds = [&](const std::string& extra) {
    return run_json("--params 1000000 --ranks 8 --gpus-per-node 4 --largest-layer 10000 " + extra)["rows"][0]["deepspeed"];
  };
  const nlohmann::json def = ds(""), cold = ds("--zero-init 0"), two = ds("--buffer-factor 2"), one = ds("--zero-init 1");
  EXPECT_EQ(def["zero3"]["cpu"], layer * 4 * 4 * 3 / 2) << "zero_init 1, factor 1.5 by default";
  EXPECT_EQ(one["zero3"]["cpu"], def["zero3"]["cpu"]);
  EXPECT_EQ(cold["zero3"]["cpu"], psi * 4 * 4 * 3 / 2) << "without zero_init each process loads the whole model";
  EXPECT_EQ(cold["zero3"]["gpu"], def["zero3"]["gpu"]);
  EXPECT_EQ(cold["zero3"]["cpu_text"], "4Ψ·gpus_per_node·1.5");
  EXPECT_EQ(two["zero3"]["cpu"], layer * 4 * 4 * 2);
  EXPECT_EQ(two["zero2"]["cpu"], psi * 4 * 4 * 2);
  EXPECT_EQ(def["zero2"]["cpu"], psi * 4 * 4 * 3 / 2);
  EXPECT_EQ(two["zero2"]["gpu"], def["zero2"]["gpu"]);
  EXPECT_EQ(two["buffer_factor"], 2.0);
  EXPECT_EQ(cold["zero_init"], false);
  // With offload of both, on 2 nodes: zero_init 18Ψ/nodes, else the larger of that and 4Ψ per GPU of a node.
  const auto off = [&](const std::string& extra) {
    return run_json("--params 1000000 --ranks 8 --gpus-per-node 4 --largest-layer 10000 --offload param --stage 3 " +
                    extra)["rows"][0]["deepspeed"]["zero3"];
  };
  EXPECT_EQ(off("")["cpu"], psi * 18 / 2 * 3 / 2);
  EXPECT_EQ(off("--zero-init 0 --buffer-factor 1")["cpu"], psi * 16);  // max(4·4, 18/2) = 16
  auto text = run_command(bin("minitorch-estimate") +
                          " --params 1000000 --ranks 8 --largest-layer 10000 --zero-init 0 --buffer-factor 2");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("zero_init = 0 (--zero-init), additional_buffer_factor 2 (--buffer-factor)"));
  EXPECT_THAT(text.output, HasSubstr("4Ψ·gpus_per_node·2"));
}

TEST(L06_EstimateCli, DeepSpeedsZeroThreeNeedsTheLargestLayerNeverZero) {
  expect_usage_error("--params 7.5B --ranks 64 --stage 3", "--largest-layer");
  expect_usage_error("--params 7.5B --ranks 64 --stage 3 --offload optimizer", "--largest-layer");
  // Beside the other stages the ZeRO-3 columns are left out, and it says so.
  auto r = run_command(bin("minitorch-estimate") + " --params 7.5B --ranks 64");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ZeRO-3 left out: DeepSpeed's estimate needs the largest layer's parameters; give "
                                  "--largest-layer L"));
  EXPECT_THAT(r.output, Not(HasSubstr("ZeRO-3 per GPU")));
  const nlohmann::json j = run_json("--params 7.5B --ranks 64");
  EXPECT_TRUE(j["rows"][0]["deepspeed"]["zero3"].is_null());
  EXPECT_EQ(j["rows"][0]["deepspeed"]["zero3_needs"], "--largest-layer");
  EXPECT_TRUE(j["rows"][0]["deepspeed"]["zero2"].is_object()) << "ZeRO-2 needs no L";
}

TEST(L06_EstimateCli, BadInputIsOneClearErrorAndExitStatus2) {
  expect_usage_error("--params abc --ranks 4", "'abc' is not a number of parameters");
  expect_usage_error("--params 1.5 --ranks 4", "whole number");
  expect_usage_error("--params 7.5B --ranks 0", "--ranks");
  expect_usage_error("--params 7.5B --ranks 4,x", "'x'");
  expect_usage_error("--params 7.5B --ranks 4 --stage 5", "--stage must be 0 (DDP), 1, 2 or 3, got '5'");
  expect_usage_error("--params 7.5B --ranks 4 --offload disk", "--offload must be 'optimizer' or 'param'");
  expect_usage_error("--params 7.5B", "--params needs --ranks");
  expect_usage_error("--ranks 4", "give one of --params");
  expect_usage_error("--params 7.5B --ranks 4 --bf16 --fp32", "exclude each other");
  expect_usage_error("--table1 --ranks 4", "--table1 sets the ranks itself");
  expect_usage_error("--params 7.5B --ranks 12 --gpus-per-node 8", "not a whole number of nodes");
  expect_usage_error("--params 7.5B --ranks 4 --gpus-per-node 8", "--gpus-per-node 8 is more than --ranks 4");
  expect_usage_error("--params 7.5B --ranks 8,4 --gpus-per-node 8", "--gpus-per-node 8 is more than --ranks 4");
  expect_usage_error("--params 7.5B --ranks 4 --stage 1 --gpus-per-node 8", "--gpus-per-node 8 is more than");
  expect_usage_error("--params 7.5B --ranks 4 --zero-init 2", "--zero-init must be 0 or 1");
  expect_usage_error("--params 7.5B --ranks 4 --zero-init yes", "--zero-init must be 0 or 1");
  expect_usage_error("--params 7.5B --ranks 4 --buffer-factor 0.5", "--buffer-factor must be a number of at least 1");
  expect_usage_error("--params 7.5B --ranks 4 --buffer-factor abc", "--buffer-factor");
  expect_usage_error("--config /nonexistent/c.json --ranks 2", "/nonexistent/c.json");
}

namespace {
// A baby GPT whose vector sizes (n_embd 10, the corpus's vocabulary) do not all divide by 4, in buckets
// of at most 700 elements: shards cut through parameters and some ranks hold padding.
std::string config_json(int stage, bool bf16, const std::string& zero_extra = "") {
  return R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,)" +
         std::string(bf16 ? R"( "bf16": {"enabled": true},)" : "") + R"(
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "zero_optimization": {"stage": )" + std::to_string(stage) + R"(, "reduce_bucket_size": 700)" + zero_extra + R"(},
    "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 10, "block_size": 8},
    "training": {"steps": 2, "eval_interval": 0, "log_interval": 1, "seed": 3}})";
}

/// `mpirun -np n minitorch-train ARGS`.
mt_test::CommandResult run_ranks(int n, const std::string& args) {
  return run_command(mt_test::mpirun_command("minitorch-train", n, args));
}
}  // namespace

TEST(L06_EstimateCli, ConfigPredictionIsWhatRealRunsMeasureToTheByte) {
  mt_test::TempDir dir;
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth.\n";
  const std::string corpus = dir.write("corpus.txt", text);
  bool padded = false, ranks_differ = false;
  struct Case {
    int n, stage;
    bool bf16;
    std::string persistence = "";  // ZeRO-3: stage3_param_persistence_threshold ("": DeepSpeed's 1e5)
  };
  for (const Case& c : {Case{2, 0, false}, Case{2, 1, false}, Case{2, 2, false}, Case{4, 0, false}, Case{4, 1, false},
                        Case{4, 2, false}, Case{4, 2, true}, Case{2, 3, false, "0"}, Case{4, 3, false, "0"},
                        Case{4, 3, true, "50"}, Case{4, 3, false}}) {
    SCOPED_TRACE("N = " + std::to_string(c.n) + ", stage " + std::to_string(c.stage) + (c.bf16 ? ", bf16" : "") +
                 (c.persistence.empty() ? "" : ", persistence " + c.persistence));
    const std::string name = std::string(c.bf16 ? "bf16_" : "f32_") + std::to_string(c.stage) + "_" + c.persistence + ".json";
    const std::string extra = c.persistence.empty() ? "" : R"(, "stage3_param_persistence_threshold": )" + c.persistence;
    const std::string config = dir.write(name, config_json(c.stage, c.bf16, extra));
    const nlohmann::json est = run_json("--config " + config + " --ranks " + std::to_string(c.n) + " --data " + corpus);
    ASSERT_EQ(est["rows"].size(), 1u);
    const nlohmann::json& row = est["rows"][0];
    EXPECT_EQ(row["config_stage"], c.stage);
    EXPECT_EQ(row["precision"], c.bf16 ? "bf16" : "f32");
    padded |= row["padding"].get<std::int64_t>() > 0;
    const nlohmann::json* predicted = nullptr;
    for (const auto& st : row["stages"])
      if (st["stage"] == c.stage) predicted = &st["exact"];
    ASSERT_NE(predicted, nullptr);

    // Two steps: the report measures at the last one, and AdamW allocates its states at its first update.
    const std::string report = dir.path("r.json");
    auto run = run_ranks(c.n, "--config " + config + " --data " + corpus + " --steps 2 --out '' --report " + report);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const nlohmann::json measured = nlohmann::json::parse(std::ifstream(report));
    ASSERT_EQ(measured["num_parameters"], row["params"]);
    ASSERT_EQ(measured["ranks"].size(), static_cast<std::size_t>(c.n));
    for (int r = 0; r < c.n; ++r) {
      const auto& m = measured["ranks"][r]["model_states"];
      const auto& p = at_rank(*predicted, r);
      EXPECT_EQ(m["param"], p["param"]) << "rank " << r;
      EXPECT_EQ(m["grad"], p["grad"]) << "rank " << r;
      EXPECT_EQ(m["optim"], p["optim"]) << "rank " << r;
      ranks_differ |= p["optim"] != at_rank(*predicted, 0)["optim"];
    }
  }
  EXPECT_TRUE(padded) << "no case had padding: the test would not see the layout";
  EXPECT_TRUE(ranks_differ) << "no case had ranks holding different bytes";
}

TEST(L10_EstimateCli, OffloadConfigPredictionIsWhatSimRunsMeasureToTheByte) {
  // ZeRO-Offload on the simulated accelerator: the device's model states, the host's, and each step's copies.
  mt_test::TempDir dir;
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth.\n";
  const std::string corpus = dir.write("corpus.txt", text);
  const std::string nvme_path = dir.path("nvme");
  std::filesystem::create_directories(nvme_path);
  struct Case {
    int n, stage;
    bool bf16, param = false;  // param: offload_param too (ZeRO-Infinity, stage 3)
    bool nvme = false, pipelined = false;  // the optimizer on NVMe, its reads and writes pipelined
    bool param_nvme = false;               // the parameter shards on NVMe too
  };
  for (const Case& c : {Case{2, 1, false}, Case{4, 2, true}, Case{4, 3, false}, Case{2, 3, true}, Case{4, 3, false, true},
                        Case{2, 3, true, true}, Case{2, 3, false, false, true}, Case{4, 3, true, true, true, true},
                        Case{2, 3, true, true, true, false, true}}) {
    SCOPED_TRACE("N = " + std::to_string(c.n) + ", stage " + std::to_string(c.stage) + (c.bf16 ? ", bf16" : "") +
                 (c.param ? (c.param_nvme ? ", offload_param nvme" : ", offload_param") : "") + (c.nvme ? ", nvme" : "") +
                 (c.pipelined ? " pipelined" : ""));
    const std::string optimizer =
        c.nvme ? R"(, "sub_group_size": 100, "offload_optimizer": {"device": "nvme", "nvme_path": ")" + nvme_path +
                     R"(", "pipeline_read": )" + (c.pipelined ? "true" : "false") + R"(, "pipeline_write": )" +
                     (c.pipelined ? "true" : "false") + "}"
               : std::string(R"(, "offload_optimizer": {"device": "cpu"})");
    const std::string config = dir.write(
        "offload.json", config_json(c.stage, c.bf16, R"(, "stage3_param_persistence_threshold": 0)" + optimizer +
                                                         (!c.param       ? ""
                                                          : c.param_nvme ? R"(, "offload_param": {"device": "nvme", "nvme_path": ")" +
                                                                               nvme_path + R"("})"
                                                                         : R"(, "offload_param": {"device": "cpu"})")));
    const nlohmann::json est = run_json("--config " + config + " --ranks " + std::to_string(c.n) + " --data " + corpus);
    const nlohmann::json* predicted = nullptr;
    for (const auto& st : est["rows"][0]["offload"])
      if (st["stage"] == c.stage) predicted = &st["exact"];
    ASSERT_NE(predicted, nullptr) << est.dump();
    const std::string report = dir.path("r.json");
    auto run = run_ranks(c.n, "--config " + config + " --data " + corpus + " --device sim --steps 2 --out '' --report " + report);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const nlohmann::json measured = nlohmann::json::parse(std::ifstream(report));
    EXPECT_EQ(measured["offload"]["param"], c.param ? (c.param_nvme ? "nvme" : "cpu") : "none");
    if (c.param) {
      EXPECT_EQ(measured["formulas"]["transfers_per_step"]["h2d_text"], "2A·PΨ/N") << "the report's formula is offload_param's";
    }
    for (int r = 0; r < c.n; ++r) {
      const auto& rank = measured["ranks"][r];
      const auto& p = at_rank(*predicted, r);
      if (c.param) {
        EXPECT_EQ(rank["model_states"]["param"], 0) << "rank " << r << ": every shard on the host";
      }
      for (const char* tag : {"param", "grad", "optim"}) {
        EXPECT_EQ(rank["model_states"][tag], p["device"][tag]) << "rank " << r << " device " << tag;
        EXPECT_EQ(rank["host_model_states"][tag], p["host"][tag]) << "rank " << r << " host " << tag;
      }
      EXPECT_EQ(rank["transfers_last_step"]["d2h"], p["d2h"]) << "rank " << r;
      EXPECT_EQ(rank["transfers_last_step"]["h2d"], p["h2d"]) << "rank " << r;
      if (c.nvme) {  // the swap files, their reads and writes, and the host's tiles
        for (const char* tag : {"param", "grad", "optim"})
          EXPECT_EQ(rank["disk_model_states"][tag], p["disk"][tag]) << "rank " << r << " disk " << tag;
        EXPECT_EQ(rank["transfers_last_step"]["disk_read"], p["disk_read"]) << "rank " << r;
        EXPECT_EQ(rank["transfers_last_step"]["disk_write"], p["disk_write"]) << "rank " << r;
        const std::int64_t host_peak = rank["host_memory"]["optim"]["peak"].get<std::int64_t>() +
                                       rank["host_memory"]["optim_temp"]["peak"].get<std::int64_t>();
        EXPECT_EQ(host_peak, p["host_step"]) << "rank " << r << ": the step's tiles, the host's whole optimizer";
      } else {
        EXPECT_EQ(rank["transfers_last_step"]["disk_read"], 0) << "rank " << r;
      }
    }
    if (c.nvme) {
      EXPECT_EQ(measured["offload"]["optimizer"], "nvme");
      EXPECT_EQ(measured["formulas"]["disk_model_states_text"], c.param_nvme ? "PΨ/N + 12Ψ/N" : "12Ψ/N");
    }
  }
}

TEST(L06_EstimateCli, ConfigTakesTheLargestLayerFromItsModel) {
  mt_test::TempDir dir;
  const std::string corpus = dir.write("corpus.txt", "In the beginning God created the heaven and the earth.\n");
  const std::string config = dir.write("c.json", config_json(3, false));
  const nlohmann::json j = run_json("--config " + config + " --ranks 4 --data " + corpus);
  const nlohmann::json& row = j["rows"][0];
  const std::int64_t psi = row["params"], vocab = row["vocab_size"];
  // n_embd 10: the MLP's c_fc holds 4·10·10 weights + 40 biases, more than wte (vocab·10), c_attn (330).
  ASSERT_LT(vocab * 10, 440) << "the corpus's vocabulary would make wte the largest";
  const auto& ds = row["deepspeed"];
  EXPECT_EQ(ds["largest_layer"], 440);
  EXPECT_EQ(ds["largest_layer_module"], "transformer.h.0.mlp.c_fc");
  EXPECT_EQ(ds["topology"], "1 node x 4 GPUs");
  EXPECT_EQ(ds["zero3"]["gpu"], 4 * 440 + 18 * psi / 4);
  EXPECT_EQ(ds["zero3"]["cpu"], 440 * 4 * 4 * 3 / 2);
  EXPECT_EQ(ds["zero2"]["gpu"], 2 * psi + 18 * psi / 4);
  const nlohmann::json cold = run_json("--config " + config + " --ranks 4 --data " + corpus + " --zero-init 0 --buffer-factor 2");
  EXPECT_EQ(cold["rows"][0]["deepspeed"]["zero3"]["cpu"], psi * 4 * 4 * 2);

  auto text = run_command(bin("minitorch-estimate") + " --config " + config + " --ranks 4 --gpus-per-node 2 --data " + corpus);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("on 2 nodes x 2 GPUs"));
  EXPECT_THAT(text.output, HasSubstr("GiB) per GPU"));
  EXPECT_THAT(text.output, HasSubstr("L = largest layer = 440 parameters, transformer.h.0.mlp.c_fc"));
  expect_usage_error("--config " + config + " --ranks 4 --gpus-per-node 8 --data " + corpus,
                     "--gpus-per-node 8 is more than --ranks 4");
  expect_usage_error("--config " + config + " --ranks 4 --largest-layer 5 --data " + corpus,
                     "--largest-layer does not go with --config");
}

// Gemini (its `gemini` section): the estimate's layout is the run's, and every rank's device model states — shards by
// the static placement, kept-gathered chunks whole, gradient shards, AdamW's states unless on the host — are what a
// run's report measures, to the byte; under auto the device caches shards on top of the estimate's floor.
TEST(L12_EstimateCli, GeminiPredictionIsWhatRealRunsMeasureToTheByte) {
  mt_test::TempDir dir;
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth.\n";
  const std::string corpus = dir.write("corpus.txt", text);
  struct Case {
    int n;
    std::string gemini;
  };
  bool kept = false, on_host = false, ranks_differ = false;
  for (const Case& c : {Case{2, R"("shard_param_frac": 0.5)"}, Case{4, R"("offload_optim_frac": 1.0, "offload_param_frac": 0.5)"},
                        Case{2, R"("placement_policy": "auto")"}}) {
    SCOPED_TRACE(std::to_string(c.n) + " ranks, " + c.gemini);
    std::string json = config_json(3, false);
    json.insert(json.find(R"("model")"), R"("gemini": {"chunk_config_dict": {"2": {"chunk_size": 256}, "4": {"chunk_size": 256}}, )" +
                                             c.gemini + "},\n    ");
    const std::string config = dir.write("gemini.json", json);
    const nlohmann::json est = run_json("--config " + config + " --ranks " + std::to_string(c.n) + " --data " + corpus);
    const nlohmann::json& g = est["rows"][0]["gemini"];
    ASSERT_TRUE(g.is_object()) << est.dump();
    kept |= g["kept_gathered"].get<int>() > 0;
    on_host |= g["shards_on_host"].get<int>() > 0;
    const std::string report = dir.path("r.json");
    auto run = run_ranks(c.n, "--config " + config + " --data " + corpus + " --steps 2 --out '' --device sim --report " + report);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const nlohmann::json measured = nlohmann::json::parse(std::ifstream(report));
    for (const char* key : {"chunk_size", "chunks", "waste_elements", "kept_gathered", "shards_on_host", "optimizer_on_host"})
      EXPECT_EQ(measured["ranks"][0]["gemini"][key], g[key]) << key;
    const bool is_auto = g["placement_policy"] == "auto";
    for (int r = 0; r < c.n; ++r) {
      const auto& m = measured["ranks"][r]["model_states"];
      const auto& p = at_rank(g["exact"], r);
      if (is_auto) {
        EXPECT_GE(m["param"].get<std::int64_t>(), p["param"].get<std::int64_t>()) << "rank " << r << ": cached on top";
      } else {
        EXPECT_EQ(m["param"], p["param"]) << "rank " << r;
      }
      EXPECT_EQ(m["grad"], p["grad"]) << "rank " << r;
      EXPECT_EQ(m["optim"], p["optim"]) << "rank " << r;
      ranks_differ |= p["optim"] != at_rank(g["exact"], 0)["optim"];
    }
  }
  EXPECT_TRUE(kept && on_host && ranks_differ) << "the cases must keep a chunk gathered, put a shard on the host and "
                                                  "hold different bytes on different ranks";
}
