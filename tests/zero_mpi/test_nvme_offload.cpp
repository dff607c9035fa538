// ZeRO-Infinity's optimizer on NVMe (offload_optimizer.device "nvme", docs/design.md §10) on 2 and 4 `sim`
// ranks: master, m and v in each rank's swap files under nvme_path, the step walking them in tiles of
// sub_group_size; the run trains as plain ZeRO-3 does (with and without offload_param, with and without the
// pipelined reads and writes), every step reads and writes 12 bytes per owned element and copies the
// gradients down and the parameters up once, the host holds tiles only (to the byte), and the files go at
// the end of the run.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "minitorch/allocator.h"
#include "runtime/step_trace.h"
#include "trace/chrome_trace.h"
#include "trace/frames.h"
#include "trace/frames_reader.h"
#include "runtime/save_and_resume.h"
#include "zero/sharded_strategy.h"
#include "runtime/estimate.h"
#include "zero/stage3.h"
#include "zero_test_util.h"

using namespace minitorch;
using zero_test::config_json;
using zero_test::SharedDir;
using zero_test::ZeroRun;
using zero_test::all_params;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kTile = 400;  // sub_group_size: a rank's shard of the baby GPT (2 or 4 ranks) is 8 or more tiles

struct Variant {
  bool bf16 = false, param_on_host = false, pipeline_read = false, pipeline_write = false, param_on_disk = false;
  std::string name() const {
    return std::string(bf16 ? "bf16" : "f32") + (param_on_host ? ", offload_param cpu" : "") +
           (param_on_disk ? ", offload_param nvme" : "") + (pipeline_read ? ", pipeline_read" : "") +
           (pipeline_write ? ", pipeline_write" : "");
  }
};

/// The ZeRO section's extra keys: every tensor in a unit, the step in tiles of kTile, and the optimizer on
/// NVMe under `nvme_path` (empty: plain ZeRO-3).
std::string zero_extra(const Variant& s, const std::string& nvme_path) {
  std::string z = R"(, "stage3_param_persistence_threshold": 0, "sub_group_size": )" + std::to_string(kTile);
  if (nvme_path.empty()) return z;
  z += R"(, "offload_optimizer": {"device": "nvme", "nvme_path": ")" + nvme_path + R"(", "pipeline_read": )" +
       (s.pipeline_read ? "true" : "false") + R"(, "pipeline_write": )" + (s.pipeline_write ? "true" : "false") + "}";
  if (s.param_on_host) z += R"(, "offload_param": {"device": "cpu"})";
  if (s.param_on_disk) z += R"(, "offload_param": {"device": "nvme", "nvme_path": ")" + nvme_path + R"("})";
  return z;
}

const zero::ShardedOptimizer& sharded_optimizer_of(const ZeroRun& run) {
  return run.engine->strategy_as<zero::ShardedStrategy>()->sharded_optimizer();
}

TransferStats one_step(ZeroRun& run) {
  const TransferStats before = transfer_stats();
  run.engine->train_batch(*run.sampler);
  const TransferStats after = transfer_stats();
  return {after.h2d - before.h2d, after.d2h - before.d2h, after.io_h2d - before.io_h2d,
          after.io_d2h - before.io_d2h, after.disk_read - before.disk_read, after.disk_write - before.disk_write};
}

}  // namespace

TEST(L11_T1_NvmeOptimizer, TrainsAsPlainZero3WhereverTheParametersLiveAndHoweverTheIoOverlaps) {
  auto& world = dist::world();
  SharedDir dir;
  for (const Variant& s : {Variant{false}, Variant{true}, Variant{false, true}, Variant{true, true, true, true},
                         Variant{false, false, true, false}, Variant{false, false, false, true},
                         Variant{false, false, false, false, true}, Variant{true, false, true, true, true}}) {
    SCOPED_TRACE(s.name());
    std::vector<float> plain_losses, plain_params;
    {
      ZeroRun plain(config_json(3, 2, 2, s.bf16, 2500, zero_extra(s, "")), &world, 11, Device::sim());
      plain_losses = plain.train(4);
      plain_params = all_params(plain);
    }
    ZeroRun run(config_json(3, 2, 2, s.bf16, 2500, zero_extra(s, dir.dir)), &world, 11, Device::sim());
    const zero::NvmeOptimizer* nvme = sharded_optimizer_of(run).nvme();
    ASSERT_NE(nvme, nullptr);
    EXPECT_GE(nvme->tiles(), 8u) << "the test should walk several tiles";
    const std::vector<float> losses = run.train(4);
    // The host AdamW (minitorch/host_adamw.h) computes what the device's does; tiles split the work otherwise
    // than the device's tiled step: f32 within 1e-6 relative, bf16's rounding of it within 1e-3.
    const double tol = s.bf16 ? 1e-3 : 1e-6;
    for (std::size_t k = 0; k < losses.size(); ++k)
      EXPECT_LE(std::abs(losses[k] - plain_losses[k]), tol * std::abs(plain_losses[k])) << "step " << k;
    EXPECT_LT(zero_test::rel_norm(all_params(run), plain_params), tol);
  }
}

TEST(L11_T1_NvmeOptimizer, PipelinedIoChangesWhenNotWhat) {
  // The same reads, updates and writes in the same order of arithmetic: bit for bit.
  auto& world = dist::world();
  SharedDir dir;
  std::vector<float> serial;
  for (const Variant& s : {Variant{}, Variant{false, false, true, true}}) {
    ZeroRun run(config_json(3, 2, 2, false, 2500, zero_extra(s, dir.dir)), &world, 11, Device::sim());
    const std::vector<float> losses = run.train(3);
    if (serial.empty()) serial = losses;
    else EXPECT_EQ(losses, serial);
    const zero::NvmeOptimizer::StepTimes t = sharded_optimizer_of(run).nvme()->last_step_times();
    EXPECT_GT(t.io_seconds, 0.0);
    EXPECT_GE(t.waited_seconds, 0.0);
  }
}

TEST(L11_T1_NvmeOptimizer, EveryStepMovesItsBytesToTheByteAndTheHostHoldsTilesOnly) {
  auto& world = dist::world();
  SharedDir dir;
  for (const Variant& s : {Variant{false}, Variant{true}, Variant{false, false, true, true}, Variant{true, true, true, false},
                         Variant{false, false, false, false, true}, Variant{true, false, false, true, true}}) {
    SCOPED_TRACE(s.name());
    ZeroRun run(config_json(3, 2, 2, s.bf16, 2500, zero_extra(s, dir.dir)), &world, 11, Device::sim());
    run.train(1);
    const zero::NvmeOptimizer& nvme = *sharded_optimizer_of(run).nvme();
    const std::int64_t owned = nvme.owned(), P = s.bf16 ? 2 : 4, G = P;
    reset_peak_memory(Device::cpu());
    const TransferStats t = one_step(run);
    if (!s.param_on_disk) {
      EXPECT_EQ(t.disk_read, 12 * owned) << "master, m, v of every owned element read once";
      EXPECT_EQ(t.disk_write, 12 * owned) << "and written back once";
    }
    EXPECT_EQ(t.d2h, G * owned) << "each gradient down once";
    // Up: the new values of every owned element, unless the shard lives off the device (offload_param), where
    // the gathers copy each unit's shard up twice per micro-step instead.
    if (!s.param_on_host && !s.param_on_disk) {
      EXPECT_EQ(t.h2d, P * owned);
    }
    // All of it as runtime::exact_offload_states predicts, the shards' files and their traffic included.
    const auto* stage3 = run.engine->strategy_as<zero::Stage3>();
    std::vector<bool> persistent(stage3->partition().buckets().size(), true);
    for (const zero::Unit& unit : stage3->units()) persistent[unit.bucket_index()] = false;
    const runtime::ExactOffload e = runtime::exact_offload_states(
        3, stage3->partition(), run.engine->plan().bytes, persistent,
        {.param = s.param_on_host || s.param_on_disk, .param_on_disk = s.param_on_disk, .nvme = true,
         .micro_steps = run.cfg.gradient_accumulation_steps, .tile_elements = kTile,
         .slots = static_cast<int>(1 + s.pipeline_read + s.pipeline_write)});
    EXPECT_EQ(t.h2d, e.h2d);
    EXPECT_EQ(t.d2h, e.d2h);
    EXPECT_EQ(t.disk_read, e.disk_read);
    EXPECT_EQ(t.disk_write, e.disk_write);
    EXPECT_EQ(run.engine->measured_model_states().param, e.device.param);
    EXPECT_EQ(run.engine->measured_host_model_states().param, e.host.param);
    EXPECT_EQ(run.engine->strategy().disk_model_state_bytes().param, e.disk.param);
    EXPECT_EQ(run.engine->strategy().disk_model_state_bytes().optim, e.disk.optim);
    if (s.param_on_disk) {  // each gather reads its unit's shard; the step writes the new values into the files
      EXPECT_EQ(t.disk_read - 12 * owned, t.h2d) << "each shard read from disk right before it goes up";
      EXPECT_EQ(t.disk_write, 12 * owned + P * owned);
      EXPECT_EQ(run.engine->measured_model_states().param, 0);
      EXPECT_EQ(run.engine->measured_host_model_states().param, 0) << "the shards live on disk, not in host memory";
    }
    // The host: tiles only. The state buffers (tag optim) and one tile's gradient and copies (optim_temp).
    const std::int64_t slots = 1 + s.pipeline_read + s.pipeline_write, tile = kTile;
    const MemoryStats host = memory_stats(Device::cpu());
    EXPECT_EQ(host.peak(MemTag::optim), slots * 12 * tile);
    EXPECT_EQ(host.peak(MemTag::optim_temp), (4 + (s.bf16 ? G + P : 0)) * tile);
    EXPECT_EQ(host.peak(MemTag::optim) + host.peak(MemTag::optim_temp), nvme.host_step_bytes());
    EXPECT_EQ(host.current(MemTag::optim), 0) << "freed after the step";
    // Between steps nothing of the optimizer is in memory: not on the device, not on the host.
    EXPECT_EQ(run.engine->measured_model_states().optim, 0);
    EXPECT_EQ(run.engine->measured_host_model_states().optim, 0);
    EXPECT_EQ(run.engine->measured_host_model_states().grad, 0) << "no gradient staging: a tile at a time";
    // On disk: three f32 files of the owned elements, each rounded up to 4 KiB.
    const zero::NvmeStore& swap = *sharded_optimizer_of(run).swap();
    for (const char* f : {"optim.master", "optim.exp_avg", "optim.exp_avg_sq"})
      EXPECT_EQ(swap.reserved(f), (4 * owned + 4095) / 4096 * 4096) << f;
  }
}

TEST(L11_NvmeOptimizer, SwapFilesLiveUnderNvmePathForTheRunAndGoWithIt) {
  auto& world = dist::world();
  SharedDir dir;
  std::string folder;
  {
    ZeroRun run(config_json(3, 2, 2, false, 2500, zero_extra(Variant{}, dir.dir)), &world, 11, Device::sim());
    folder = sharded_optimizer_of(run).swap()->folder();
    EXPECT_TRUE(folder.starts_with(dir.dir + "/minitorch-swap/")) << folder;
    EXPECT_TRUE(folder.ends_with("/rank" + std::to_string(world.rank()))) << folder;
    run.train(1);
    for (const char* f : {"optim.master", "optim.exp_avg", "optim.exp_avg_sq"})
      EXPECT_TRUE(fs::exists(folder + "/" + std::string(f) + ".swap")) << f;
  }
  {  // offload_param "nvme": each unit's shard in a file of the same folder
    ZeroRun run(config_json(3, 2, 2, false, 2500, zero_extra(Variant{false, false, false, false, true}, dir.dir)), &world,
                11, Device::sim());
    folder = sharded_optimizer_of(run).swap()->folder();
    for (const zero::Unit& unit : run.engine->strategy_as<zero::Stage3>()->units()) {
      EXPECT_EQ(unit.bucket().home, zero::ShardHome::disk) << unit.name();
      EXPECT_TRUE(unit.bucket().param_shard.is_released()) << unit.name() << ": no values in memory";
      EXPECT_TRUE(fs::exists(folder + "/" + zero::shard_swap_file(unit.bucket_index()) + ".swap")) << unit.name();
    }
  }
  EXPECT_FALSE(fs::exists(folder));
  EXPECT_FALSE(fs::exists(folder)) << "a clean end removes the rank's folder";
  world.barrier();
  EXPECT_FALSE(fs::exists(dir.dir + "/minitorch-swap")) << "and the swap root, once empty";
}

TEST(L11_NvmeOptimizer, CheckpointsResumeAcrossNvmeAndPlainZero3) {
  // A sharded save of an NVMe run holds AdamW's names (the states read back from disk): a plain run resumes it,
  // and an NVMe run resumes a plain one, each going on as the run that saved it.
  auto& world = dist::world();
  SharedDir dir;
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "f32");
    for (bool nvme_saves : {true, false}) {
      const std::string path = dir.path(std::string("ckpt") + (bf16 ? "16" : "32") + (nvme_saves ? "n" : "p"));
      // The NVMe side keeps the parameter shards on disk too.
      const Variant v{bf16, false, false, false, true};
      const std::string saver = zero_extra(v, nvme_saves ? dir.dir : ""), loader = zero_extra(v, nvme_saves ? "" : dir.dir);
      std::vector<float> continued;
      {
        ZeroRun run(config_json(3, 2, 2, bf16, 2500, saver), &world, 11, Device::sim());
        run.train(2);
        runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");
        world.barrier();
        continued = run.train(2);
      }
      ZeroRun resumed(config_json(3, 2, 2, bf16, 2500, loader), &world, 99, Device::sim());
      runtime::resume_from(path, *resumed.engine);
      const std::vector<float> losses = resumed.train(2);
      for (std::size_t k = 0; k < losses.size(); ++k)
        EXPECT_LE(std::abs(losses[k] - continued[k]), (bf16 ? 1e-3 : 1e-6) * std::abs(continued[k]))
            << (nvme_saves ? "nvme saved, plain resumed" : "plain saved, nvme resumed") << ", step " << k + 3;
    }
  }
}

TEST(L11_NvmeOptimizer, AMissingNvmePathIsOneErrorNamingIt) {
  auto& world = dist::world();
  const std::string missing = "/nonexistent/minitorch-nvme";
  try {
    ZeroRun run(config_json(3, 2, 2, false, 2500, zero_extra(Variant{}, missing)), &world, 11, Device::sim());
    ADD_FAILURE() << "the run started without its swap folder";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
}

TEST(L11_NvmeOptimizer, FramesSayWhereTheStatesLiveAndShowTheShardOnDisk) {
  // frames.json's run.pools: the parameters and the optimizer on disk; the optimizer track holds this rank's
  // pieces once a step has made their states (AdamW keeps none of them in memory here).
  auto& world = dist::world();
  SharedDir dir;
  ZeroRun run(config_json(3, 2, 2, false, 2500, zero_extra(Variant{false, false, false, false, true}, dir.dir)), &world,
              11, Device::sim());
  trace::TraceRecorder recorder;
  {
    events::Attach on(recorder);
    run.train(2);
  }
  const std::vector<events::Event> events = recorder.events();
  const std::vector<nlohmann::json> frames = trace::frames_of(events);
  const nlohmann::json doc = runtime::gather_frames(events, &world, *run.engine);
  ASSERT_FALSE(frames.empty());
  std::int64_t held = 0;
  for (const auto& r : frames.back()["optim"]) held += r["end"].get<std::int64_t>() - r["begin"].get<std::int64_t>();
  EXPECT_EQ(held, sharded_optimizer_of(run).nvme()->owned()) << "the optimizer shard, on disk";
  if (world.rank() == 0) {
    EXPECT_EQ(doc["run"]["pools"]["optim"], "disk");
    EXPECT_EQ(doc["run"]["pools"]["params"], "disk");
    const trace::FramesDoc parsed = trace::parse_frames(doc, "test");
    EXPECT_EQ(parsed.optim_pool, "disk");
    EXPECT_EQ(parsed.params_pool, "disk");
  }
  // The tiled step, animated: per step one frame per tile ("tile k/n", n the most tiles of any rank), each holding
  // that tile of this rank's shard in host memory ("staged") and nothing else staged; over a step every owned
  // element is staged exactly once.
  const zero::NvmeOptimizer& nvme = *sharded_optimizer_of(run).nvme();
  std::size_t most = 0;
  for (int r = 0; r < world.size(); ++r)
    most = std::max(most, zero::NvmeOptimizer::tiles_of_rank(run.engine->strategy_as<zero::Stage3>()->partition(), r, kTile));
  EXPECT_EQ(zero::NvmeOptimizer::tiles_of_rank(run.engine->strategy_as<zero::Stage3>()->partition(), world.rank(), kTile),
            nvme.tiles());
  std::map<std::int64_t, std::int64_t> staged_per_step, tile_frames_per_step;
  for (const nlohmann::json& f : frames) {
    const std::string label = f["label"].get<std::string>();
    std::int64_t staged = 0;
    for (const auto& r : f["optim"])
      if (r["state"] == "staged") staged += r["end"].get<std::int64_t>() - r["begin"].get<std::int64_t>();
    if (label.rfind("tile ", 0) != 0) {
      EXPECT_EQ(staged, 0) << label << ": a tile is staged only during the step";
      continue;
    }
    EXPECT_EQ(f["phase"], "optimizer_step");
    const std::int64_t step = f["step"].get<std::int64_t>();
    const std::size_t k = static_cast<std::size_t>(tile_frames_per_step[step]++);
    EXPECT_EQ(label, "tile " + std::to_string(k + 1) + "/" + std::to_string(most));
    EXPECT_LE(staged, static_cast<std::int64_t>(kTile));
    if (k >= nvme.tiles()) {
      EXPECT_EQ(staged, 0) << "this rank's tiles are done";
    }
    staged_per_step[step] += staged;
  }
  ASSERT_EQ(tile_frames_per_step.size(), 2u) << "two steps";
  for (const auto& [step, n] : tile_frames_per_step) {
    EXPECT_EQ(n, static_cast<std::int64_t>(most)) << "step " << step;
    EXPECT_EQ(staged_per_step[step], nvme.owned()) << "step " << step << ": every owned element staged once";
  }
  // The swap's reads and writes are spans of their own (the trace's disk track).
  std::int64_t disk_spans = 0;
  for (const events::Event& e : events)
    if (e.category == events::Category::transfer && e.kind == events::Kind::begin && e.name.starts_with("disk_")) ++disk_spans;
  EXPECT_GT(disk_spans, 0);
}
