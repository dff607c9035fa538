// `minitorch-train --device sim [--device-memory SIZE]` (docs/design.md §10): the seeds' stage-3 offload config
// on 4 simulated accelerators, an out-of-memory error that names the rank, the bytes, the formula and the
// levers and ends the job at once with the earlier checkpoint intact, and bad values one clear error each.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "test_util.h"

using mt_test::bin;
using mt_test::contains;

namespace {

const char* kDdpConfig = R"({
  "train_batch_size": 8, "train_micro_batch_size_per_gpu": 4,
  "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
  "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 32},
  "training": {"steps": 3, "eval_interval": 0, "log_interval": 1, "seed": 7, "tokenizer": "char"}
})";

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(std::ifstream(path)); }

std::string train(const mt_test::TempDir& dir, const std::string& config, const std::string& args) {
  return bin("minitorch-train") + " --config " + config + " --data " + dir.path("corpus.txt") + " " + args;
}

}  // namespace

#ifdef MT_MPIEXEC
TEST(L10_DeviceCli, SeedsStage3OffloadConfigRunsOnFourSimRanksWithItsBytesToTheFormula) {
  mt_test::TempDir dir;
  mt_test::write_corpus(dir);
  const std::string report = dir.path("report.json");
  auto r = mt_test::run_command(mt_test::mpirun_command(
      "minitorch-train", 4,
      "--config " + mt_test::source("configs/zero3_offload.json") + " --data " + dir.path("corpus.txt") +
          " --steps 2 --device sim --out '' --report " + report));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = read_json(report);
  EXPECT_EQ(j["zero_stage"], 3);
  EXPECT_EQ(j["offload"]["optimizer"], "cpu");
  EXPECT_EQ(j["gradient_accumulation_steps"], 4);
  ASSERT_EQ(j["ranks"].size(), 4u);
  std::int64_t owned = 0;
  for (const auto& rank : j["ranks"]) {
    EXPECT_EQ(rank["device"], "sim");
    EXPECT_EQ(rank["model_states"]["optim"], 0) << "the optimizer lives on the host";
    const std::int64_t optim = rank["host_model_states"]["optim"], grad = rank["host_model_states"]["grad"];
    ASSERT_EQ(optim % 12, 0);
    const std::int64_t mine = optim / 12;  // f32 master + m + v per owned element
    owned += mine;
    EXPECT_EQ(grad, 4 * mine);
    EXPECT_EQ(rank["host_model_states"]["param"], 0) << "f32: the master itself goes up";
    EXPECT_EQ(rank["transfers_last_step"]["d2h"], 4 * mine) << "the gradient shard, once per step";
    EXPECT_EQ(rank["transfers_last_step"]["h2d"], 4 * mine) << "the updated shard";
    // The input apart: 4 micro-batches of token ids and targets (1 × 64 i32 each) and positions 0..63 go up,
    // 4 losses come down.
    EXPECT_EQ(rank["transfers_last_step"]["io_h2d"], 4 * (2 * 64 + 64) * 4);
    EXPECT_EQ(rank["transfers_last_step"]["io_d2h"], 4 * 4);
  }
  EXPECT_EQ(owned, j["num_parameters"].get<std::int64_t>()) << "the shards own every parameter once";
  EXPECT_DOUBLE_EQ(j["formulas"]["host_model_states"]["total"].get<double>(), 16.0 * owned / 4);
  EXPECT_DOUBLE_EQ(j["formulas"]["transfers_per_step"]["d2h"].get<double>(), 4.0 * owned / 4);
}

TEST(L10_DeviceCli, OutOfMemoryNamesRankBytesFormulaAndLeversEndsTheJobAndKeepsTheCheckpoint) {
  mt_test::TempDir dir;
  mt_test::write_corpus(dir);
  const std::string config = dir.write("ddp.json", kDdpConfig), ckpt = dir.path("ckpt.safetensors");
  const std::string report = dir.path("report.json");
  // A run that fits: its checkpoint, and what its device held.
  auto ok = mt_test::run_command(
      mt_test::mpirun_command("minitorch-train", 2, "--config " + config + " --data " + dir.path("corpus.txt") +
                                                        " --device sim --out " + ckpt + " --report " + report));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const nlohmann::json j = read_json(report);
  const auto& rank0 = j["ranks"][0];
  const std::int64_t states = rank0["model_states"]["param"].get<std::int64_t>() +
                              rank0["model_states"]["grad"].get<std::int64_t>() +
                              rank0["model_states"]["optim"].get<std::int64_t>();
  const std::int64_t peak = rank0["memory"]["total"]["peak"];
  ASSERT_LT(states, peak);
  const std::string saved = mt_test::read_text(ckpt);
  // Room for the model states, not for the step: an out-of-memory error inside it.
  const std::int64_t capacity = (states + peak) / 2;
  const auto t0 = std::chrono::steady_clock::now();
  auto oom = mt_test::run_command(mt_test::mpirun_command(
      "minitorch-train", 2, "--config " + config + " --data " + dir.path("corpus.txt") +
                                " --device sim --device-memory " + std::to_string(capacity) + " --out " + ckpt));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(oom.exit_code, 0) << oom.output;
  EXPECT_LT(seconds, 60) << "every rank ends within seconds of the error";
  const std::vector<std::string> parts = {"asked for", "of a capacity of", std::to_string(capacity),
                           "in use: param", "activation", "this run: ZeRO stage 0 (DDP)", "(P+G+K)Ψ", "ZeRO-1",
                           "ZeRO-3", "offload_optimizer", "16Ψ/N", "micro-batch 2 with gradient_accumulation_steps 2",
                           "activation checkpointing"};
  for (const std::string& part : parts)
    EXPECT_TRUE(contains(oom.output, part)) << "missing '" << part << "' in:\n" << oom.output;
  EXPECT_TRUE(contains(oom.output, "out of memory on sim of rank 0") || contains(oom.output, "out of memory on sim of rank 1"))
      << oom.output;
  EXPECT_TRUE(contains(oom.output, "leaving")) << "what each lever leaves for activations\n" << oom.output;
  EXPECT_EQ(mt_test::read_text(ckpt), saved) << "the checkpoint saved earlier was changed";
  for (const auto& e : std::filesystem::directory_iterator(dir.path("")))
    EXPECT_FALSE(contains(e.path().filename().string(), ".tmp")) << "left behind: " << e.path();
}
#endif

TEST(L10_DeviceCli, ModelStatesBeyondTheCapacityAreSaidBeforeTheFirstStep) {
  mt_test::TempDir dir;
  mt_test::write_corpus(dir);
  const std::string config = dir.write("ddp.json", kDdpConfig);
  auto r = mt_test::run_command(train(dir, config, "--device sim --device-memory 100KiB --out ''"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(contains(r.output, "error: out of memory on sim before the first step: the model states alone need")) << r.output;
  EXPECT_TRUE(contains(r.output, "capacity of 0.10 MiB (102400 B)")) << r.output;
  EXPECT_TRUE(contains(r.output, "more ranks")) << "one rank: the lever is more ranks\n" << r.output;
  EXPECT_FALSE(contains(r.output, "step ")) << "no step ran\n" << r.output;
}

// The pre-step check reads the plan: on one rank, offload_optimizer runs its stage (2 here) with the
// optimizer on the host, so the device holds PΨ + GΨ/N = 8Ψ, not DDP's 16Ψ. 300 KiB holds 8Ψ (Ψ ≈ 28.5 k)
// but not 16Ψ: the run starts and runs out in its first forward, with the offloaded stage's explanation.
TEST(L10_DeviceCli, OneRankWithOffloadIsCheckedAsTheStageThatRuns) {
  mt_test::TempDir dir;
  mt_test::write_corpus(dir);
  nlohmann::json cfg = nlohmann::json::parse(kDdpConfig);
  cfg["zero_optimization"] = {{"stage", 2}, {"offload_optimizer", {{"device", "cpu"}}}};
  const std::string config = dir.write("offload.json", cfg.dump());
  auto r = mt_test::run_command(train(dir, config, "--device sim --device-memory 300KiB --out ''"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_FALSE(contains(r.output, "before the first step")) << r.output;
  EXPECT_FALSE(contains(r.output, "must be")) << "no internal error\n" << r.output;
  EXPECT_TRUE(contains(r.output, "of activation asked for")) << r.output;
  EXPECT_TRUE(contains(r.output, "this run: ZeRO stage 2 + offload_optimizer")) << r.output;
  EXPECT_TRUE(contains(r.output, "model states PΨ + GΨ/N")) << r.output;
  // 100 KiB holds not even 8Ψ: said before the first step, in the offloaded stage's words.
  r = mt_test::run_command(train(dir, config, "--device sim --device-memory 100KiB --out ''"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "before the first step")) << r.output;
  EXPECT_TRUE(contains(r.output, "this run: ZeRO stage 2 + offload_optimizer")) << r.output;
}

#ifdef MT_MPIEXEC
// A pipeline stage holds its own share of the model: the baby's 16Ψ = 12.35 MiB was refused by a 10 MiB
// card, but each of 2 stages holds about half (pipeline::memory_run_for_rank: 6.29 and 6.05 MiB) and trains.
TEST(L10_DeviceCli, APipelineStageIsCheckedForItsOwnShare) {
  mt_test::TempDir dir;
  mt_test::write_corpus(dir);
  nlohmann::json cfg = read_json(mt_test::source("configs/pipeline.json"));  // 2 stages x 2 replicas: make it 2 x 1
  cfg["train_batch_size"] = 4;  // micro-batch 1: 4 micro-batches' activations of 2 blocks fit beside the states
  cfg["train_micro_batch_size_per_gpu"] = 1;
  cfg["scheduler"]["params"]["total_num_steps"] = 1;
  const std::string config = dir.write("pipeline.json", cfg.dump());
  const auto run = [&](const std::string& card) {
    return mt_test::run_command(mt_test::mpirun_command(
        "minitorch-train", 2, "--config " + config + " --data " + dir.path("corpus.txt") +
                                  " --steps 1 --eval-iters 1 --device sim --device-memory " + card + " --out ''"));
  };
  auto r = run("10MiB");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run("4MiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "before the first step")) << r.output;
  std::smatch psi;
  ASSERT_TRUE(std::regex_search(r.output, psi, std::regex("Ψ = ([0-9]+)"))) << r.output;
  EXPECT_LT(std::stoll(psi[1]), 500000) << "the stage's Ψ, not the whole baby's (about 809 k)\n" << r.output;
}
#endif

TEST(L10_DeviceCli, BadDeviceValuesAreOneClearErrorEach) {
  mt_test::TempDir dir;
  mt_test::write_corpus(dir);
  const std::string config = dir.write("ddp.json", kDdpConfig);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--device gpu", "--device 'gpu' is not a device: use cpu, sim"},
      {"--device sim --device-memory -5MiB", "--device-memory: '-5MiB' is negative"},
      {"--device sim --device-memory 12XB", "unknown unit 'XB'"},
      {"--device sim --device-memory lots", "'lots' is not a size"},
      {"--device sim --device-memory 0", "--device-memory is 0 bytes: give the simulated accelerator's capacity"},
      {"--device cpu --device-memory 24MiB", "--device-memory is the simulated accelerator's capacity: it needs --device sim"},
  };
  for (const auto& [args, message] : cases) {
    auto r = mt_test::run_command(train(dir, config, args + " --out ''"));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(mt_test::error_lines(r.output), 1) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, message)) << args << "\n" << r.output;
  }
  // The config's own section, the same way.
  std::string text = kDdpConfig;
  const std::vector<std::pair<std::string, std::string>> sections = {
      {R"("device": {"type": "gpu"})", "device.type must be one of cpu, sim, cuda, got 'gpu'"},
      {R"("device": {"type": "sim", "memory": "-1MiB"})", "device.memory: '-1MiB' is negative"},
      {R"("device": {"type": "sim", "memory": "much"})", "device.memory: 'much' is not a size"},
      {R"("device": {"type": "cpu", "memory": "24MiB"})", "device.memory is the simulated accelerator's capacity"},
  };
  for (const auto& [section, message] : sections) {
    std::string bad = text;
    bad.insert(bad.find('{') + 1, section + ",");
    const std::string path = dir.write("bad.json", bad);
    auto r = mt_test::run_command(train(dir, path, "--out ''"));
    EXPECT_EQ(r.exit_code, 2) << section << "\n" << r.output;
    EXPECT_EQ(mt_test::error_lines(r.output), 1) << section << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, message)) << section << "\n" << r.output;
  }
  // A config that asks for sim with a capacity runs there (the flags would override it).
  std::string on_sim = text;
  on_sim.insert(on_sim.find('{') + 1, R"("device": {"type": "sim", "memory": "64MiB"},)");
  auto r = mt_test::run_command(train(dir, dir.write("sim.json", on_sim), "--steps 1 --out ''"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "device sim (each rank: a simulated accelerator, capacity 64.00 MiB)")) << r.output;
}
