// Sharded checkpoints (runtime/sharded_checkpoint.h) on the ranks of this job (2 and 4): a save and a
// resume on the same ranks continue bit-identically at every stage; the consolidated file holds the
// gathered parameters; each kind of bad directory is one clear error; a save that fails before its
// rename leaves the previous save whole. Resuming on another number of ranks is in
// tests/tools/test_sharded_checkpoint_cli.cpp (it needs two jobs).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "minitorch/safetensors.h"
#include "runtime/checkpoint.h"
#include "runtime/save_and_resume.h"
#include "runtime/save_target.h"
#include "runtime/sharded_checkpoint.h"
#include "runtime_mpi/save_test_util.h"
#include "test_util.h"
#include "zero/stage3.h"
#include "zero_mpi/zero_test_util.h"

using namespace minitorch;
using zero_test::config_json;
using zero_test::SharedDir;
using zero_test::ZeroRun;
namespace fs = std::filesystem;

namespace {
/// Its arguments printed one after the other (GCC 12 warns, wrongly, on "a" + std::string(...)).
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

/// Trains `json` `before` steps, saves at `path`, trains `after` more: the losses after the save.
std::vector<float> train_save_train(const std::string& json, const std::string& path, int before, int after,
                                    const std::string& run_id = "run-a") {
  ZeroRun run(json, &dist::world(), 11);
  run.train(before);
  runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), run_id);
  return run.train(after);
}
}  // namespace

TEST(L06_ShardedCheckpoint, ResumeOnTheSameRanksIsBitIdenticalAtEveryStage) {
  SharedDir dir;
  for (auto [stage, bf16] : {std::pair{1, false}, {2, false}, {3, false}, {2, true}}) {
    SCOPED_TRACE("stage " + std::to_string(stage) + (bf16 ? " bf16" : " fp32"));
    const std::string json = config_json(stage, 2, 1, bf16, 2500, stage == 3 ? R"(, "stage3_param_persistence_threshold": 0)" : "");
    const std::string path = dir.path(cat("s", stage, bf16 ? "b" : "f"));
    const std::vector<float> uninterrupted = train_save_train(json, path, 3, 3);
    ZeroRun resumed(json, &dist::world(), 99);  // another init: every weight must come from the save
    const runtime::ResumeInfo info = runtime::resume_from(path, *resumed.engine);
    EXPECT_EQ(info.step, 3);
    EXPECT_TRUE(info.warnings.empty());
    EXPECT_EQ(resumed.engine->global_steps(), 3);
    EXPECT_EQ(resumed.engine->strategy().optimizer_steps(), 3);
    EXPECT_EQ(resumed.train(3), uninterrupted) << "losses must be equal to the bit";
  }
}

TEST(L06_ShardedCheckpoint, DirectoryHoldsOneShardPerRankAndAManifest) {
  SharedDir dir;
  auto& world = dist::world();
  const std::string path = dir.path("ckpt");
  ZeroRun run(config_json(2, 2, 1), &world, 11);
  run.train(2);
  runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");
  const runtime::ShardedManifest m = runtime::check_complete_sharded(path);
  EXPECT_EQ(m.zero_stage, 2);
  EXPECT_EQ(m.data_parallel_size, world.size());
  EXPECT_EQ(m.step, 2);
  EXPECT_EQ(m.numel, run.psi());
  EXPECT_EQ(m.shards.size(), static_cast<std::size_t>(world.size()));
  EXPECT_FALSE(fs::exists(path + ".partial"));
  // Each shard holds exactly this rank's pieces: param + exp_avg + exp_avg_sq of each (fp32: no master).
  SafetensorsFile mine = load_safetensors(path + "/" + runtime::shard_file_name(world.rank(), world.size()));
  const nn::NamedTensors pieces = run.engine->strategy().parameter_pieces();
  EXPECT_EQ(mine.tensors.size(), 3 * pieces.size());
  std::int64_t elements = 0;
  for (const auto& [name, t] : pieces) elements += t.numel();
  std::int64_t in_file = 0;
  for (const auto& [name, t] : mine.tensors)
    if (name.rfind("param.", 0) == 0) in_file += t.numel();
  EXPECT_EQ(in_file, elements) << "Ψ/N of the parameters, without the padding";
}

TEST(L06_ShardedCheckpoint, ConsolidatedFileHoldsTheGatheredParameters) {
  SharedDir dir;
  auto& world = dist::world();
  for (auto [stage, bf16] : {std::pair{3, false}, {1, true}}) {
    SCOPED_TRACE("stage " + std::to_string(stage) + (bf16 ? " bf16" : " fp32"));
    const std::string path = dir.path(cat("c", stage)), out = dir.path(cat("c", stage, ".safetensors"));
    ZeroRun run(config_json(stage, 2, 1, bf16, 2500, stage == 3 ? R"(, "stage3_param_persistence_threshold": 0)" : ""),
                &world, 11);
    run.train(3);
    runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");
    if (world.rank() == 0) {
      EXPECT_EQ(runtime::consolidate(path, out), run.psi());
    }
    world.barrier();
    auto* s3 = const_cast<zero::Stage3*>(run.engine->strategy_as<zero::Stage3>());
    if (s3) s3->gather_all();
    runtime::CheckpointInfo info;
    auto model = runtime::load_model(out, &info);
    EXPECT_EQ(info.step, 3);
    auto got = model->named_parameters(), want = run.engine->model().named_parameters();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].second.dtype(), DType::f32) << got[i].first;
      // bf16: the file holds the f32 masters, whose rounding is the run's bf16 parameter.
      EXPECT_EQ(got[i].second.to(want[i].second.dtype()).to_vector(), want[i].second.to_vector()) << got[i].first;
    }
    if (s3) s3->release_all();
    world.barrier();
  }
}

namespace {
/// Copies `from` to `to` on rank 0, applies `damage` there, and returns every rank's resume error.
std::string resume_error_after(const std::string& from, const std::string& to, const std::function<void()>& damage) {
  auto& world = dist::world();
  if (world.rank() == 0) {
    fs::copy(from, to, fs::copy_options::recursive);
    damage();
  }
  world.barrier();
  ZeroRun fresh(config_json(2, 2, 1), &world, 99);
  return mt_test::error_of([&] { runtime::resume_from(to, *fresh.engine); });
}
void rewrite(const std::string& file, const std::function<void(std::string&)>& edit) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  edit(bytes);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}
}  // namespace

TEST(L06_ShardedCheckpoint, EachBadDirectoryIsOneClearError) {
  SharedDir dir;
  auto& world = dist::world();
  const std::string good = dir.path("good"), other = dir.path("other");
  train_save_train(config_json(2, 2, 1), good, 2, 0, "run-a");
  train_save_train(config_json(2, 2, 1), other, 2, 0, "run-b");  // the same state, another run's id
  const std::string shard1 = cat("/", runtime::shard_file_name(1, world.size()));
  struct Case {
    const char* name;
    std::function<void(const std::string&)> damage;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"missing shard", [&](const std::string& d) { fs::remove(d + shard1); }, "is missing; the save is incomplete"},
      {"shard of the wrong size", [&](const std::string& d) { rewrite(d + shard1, [](std::string& b) { b += "xx"; }); },
       "bytes but the save wrote"},
      {"changed bytes", [&](const std::string& d) { rewrite(d + shard1, [](std::string& b) { b[b.size() - 3] ^= 0x40; }); },
       "does not match the manifest's checksum"},
      {"shard of another run", [&](const std::string& d) { fs::copy_file(other + shard1, d + shard1, fs::copy_options::overwrite_existing); },
       "is from another run"},
      {"manifest of another run",
       [&](const std::string& d) { rewrite(d + "/manifest.json", [](std::string& b) { b.replace(b.find("run-a"), 5, "run-c"); }); },
       "is from another run"},
      {"no manifest", [&](const std::string& d) { fs::remove(d + "/manifest.json"); }, "is missing, so it is not one complete sharded save"},
      {"garbage manifest", [&](const std::string& d) { rewrite(d + "/manifest.json", [](std::string& b) { b.resize(b.size() / 2); }); },
       "is unreadable"},
      // The manifest's own fields, which no checksum covers, are held to the facts every shard carries.
      {"optimizer_steps edited",
       [&](const std::string& d) {
         rewrite(d + "/manifest.json", [](std::string& b) {
           nlohmann::json j = nlohmann::json::parse(b);
           j["optimizer_steps"] = 1000;
           b = j.dump();
         });
       },
       "the manifest's optimizer_steps is 1000 but the save wrote 2"},
      {"a shape edited",  // (rows, cols) -> (cols, rows): the same numel
       [&](const std::string& d) {
         rewrite(d + "/manifest.json", [](std::string& b) {
           nlohmann::json j = nlohmann::json::parse(b);
           auto& shape = j["params"][0]["shape"];
           std::swap(shape[0], shape[1]);
           b = j.dump();
         });
       },
       "the manifest's params is"},
      {"a piece left out",  // a consistent directory (sizes and checksums agree) that misses elements
       [&](const std::string& d) {
         SafetensorsFile f = load_safetensors(d + shard1);
         f.tensors.erase(f.tensors.begin());
         save_safetensors(d + shard1, f.tensors, f.metadata);
         rewrite(d + "/manifest.json", [&](std::string& b) {
           nlohmann::json j = nlohmann::json::parse(b);
           const runtime::ManifestFile now = runtime::describe_file(d + shard1);
           char sum[17];
           std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(now.fnv1a64));
           j["shards"][1]["bytes"] = now.bytes;
           j["shards"][1]["fnv1a64"] = sum;
           b = j.dump();
         });
       },
       "are in no shard"},
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string err = resume_error_after(good, dir.path("bad" + std::to_string(k++)), [&] {
      c.damage(dir.path("bad" + std::to_string(k - 1)));
    });
    EXPECT_TRUE(mt_test::contains(err, "cannot resume from '")) << err;
    EXPECT_TRUE(mt_test::contains(err, c.expect)) << err;
  }
}

using save_test::save_with_rank0_failing_before;

TEST(L06_ShardedCheckpoint, SaveThatFailsBeforeItsRenameLeavesThePreviousSaveWhole) {
  SharedDir dir;
  auto& world = dist::world();
  const std::string path = dir.path("ckpt");
  ZeroRun run(config_json(1, 2, 1), &world, 11);
  run.train(2);
  runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");
  run.train(1);
  // Every file of the new save is written; rank 0 fails just before the rename (a full disk, a kill).
  save_with_rank0_failing_before(0, path, run, world);
  EXPECT_TRUE(fs::exists(path + ".partial"));
  ZeroRun resumed(config_json(1, 2, 1), &world, 99);
  EXPECT_EQ(runtime::resume_from(path, *resumed.engine).step, 2) << "the previous save, whole";
  // The next save clears what the failed one left.
  runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");
  EXPECT_FALSE(fs::exists(path + ".partial"));
  EXPECT_FALSE(fs::exists(path + ".old"));
  EXPECT_EQ(runtime::check_complete_sharded(path).step, 3);
}

TEST(L06_ShardedCheckpoint, AKillBetweenTheRenamesLeavesACompleteSaveThatResumeFinds) {
  // Before step 1 of the switch (PATH is at PATH.old, the new save still at PATH.partial) and before step 2
  // (the new save at PATH, PATH.old not yet removed): --resume PATH and consolidation find the complete one.
  auto& world = dist::world();
  for (int k : {1, 2}) {
    SCOPED_TRACE(cat("killed before step ", k));
    SharedDir dir;
    const std::string path = dir.path("ckpt");
    ZeroRun run(config_json(2, 2, 1), &world, 11);
    run.train(2);
    runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");
    run.train(1);
    save_with_rank0_failing_before(k, path, run, world);
    EXPECT_EQ(fs::exists(path), k == 2);
    EXPECT_TRUE(fs::exists(path + ".old"));
    const runtime::LocatedSave where = runtime::locate_save(path);
    EXPECT_EQ(where.path, k == 1 ? path + ".partial" : path);
    ZeroRun resumed(config_json(2, 2, 1), &world, 99);
    const runtime::ResumeInfo info = runtime::resume_from(path, *resumed.engine);
    EXPECT_EQ(info.step, 3) << "the new save, whole";
    if (k == 1) {
      ASSERT_EQ(info.warnings.size(), 1u);
      EXPECT_TRUE(mt_test::contains(info.warnings[0], "using '" + path + ".partial', the complete new save beside it"))
          << info.warnings[0];
    }
    if (world.rank() == 0) {
      EXPECT_GT(runtime::consolidate(where.path, dir.path("model.safetensors")), 0);
      EXPECT_EQ(runtime::load_model(dir.path("model.safetensors"))->num_parameters(), run.engine->model().num_parameters());
    }
    world.barrier();
    runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");  // clears what the killed one left
    EXPECT_FALSE(fs::exists(path + ".partial"));
    EXPECT_FALSE(fs::exists(path + ".old"));
    EXPECT_EQ(runtime::locate_save(path).path, path);
    world.barrier();
  }
}

TEST(L06_ShardedCheckpoint, OutThatIsAFileOrAUsersDirectoryIsRefusedAndLeftAsItWas) {
  SharedDir dir;
  auto& world = dist::world();
  const std::string app = dir.path("app");
  if (world.rank() == 0) {
    std::ofstream(dir.path("file")) << "x";
    fs::create_directories(dir.path("notes"));
    std::ofstream(dir.path("notes/a.txt")) << "keep me";
    // A user's folder whose manifest.json is its own: the name alone does not make it a checkpoint.
    fs::create_directories(app + "/src");
    std::ofstream(app + "/manifest.json") << R"({"name": "my web app"})";
    std::ofstream(app + "/src/main.js") << "console.log(1)";
    std::ofstream(app + "/README") << "read me";
    fs::create_directories(dir.path("ck.old"));
    std::ofstream(dir.path("ck.old/a.txt")) << "mine";
    const auto problem = [&](const std::string& name) {
      return runtime::save_target_problem(dir.path(name), runtime::SaveKind::sharded);
    };
    EXPECT_TRUE(mt_test::contains(problem("file"), "is a file"));
    EXPECT_TRUE(mt_test::contains(problem("notes"), "is a directory that is not a sharded checkpoint: it holds 'a.txt'"));
    EXPECT_TRUE(mt_test::contains(problem("app"), "is a directory that is not a sharded checkpoint: it holds 'README'"))
        << problem("app");
    EXPECT_TRUE(mt_test::contains(problem("ck"), "'" + dir.path("ck.old") + "' is a directory that is not a sharded checkpoint"))
        << problem("ck");
    EXPECT_EQ(problem("new"), "");
  }
  world.barrier();
  ZeroRun run(config_json(2, 2, 1), &world, 11);
  for (const std::string& out : {dir.path("notes"), app, dir.path("ck")}) {
    const std::string err = mt_test::error_of([&] {
      runtime::save_sharded_checkpoint(out, *run.engine, run.ds.tokenizer(), "run-a");
    });
    EXPECT_TRUE(mt_test::contains(err, "not a sharded checkpoint")) << err;  // on every rank, before any barrier
    EXPECT_FALSE(fs::exists(out + ".partial"));
  }
  EXPECT_EQ(mt_test::read_text(dir.path("notes/a.txt")), "keep me");
  EXPECT_EQ(mt_test::read_text(app + "/manifest.json"), R"({"name": "my web app"})");
  EXPECT_EQ(mt_test::read_text(app + "/src/main.js"), "console.log(1)");
  EXPECT_EQ(mt_test::read_text(app + "/README"), "read me");
  EXPECT_EQ(mt_test::read_text(dir.path("ck.old/a.txt")), "mine");
  world.barrier();
}

TEST(L06_ShardedCheckpoint, ASingleFileSaveOfDdpResumesAtStage3AndBack) {
  SharedDir dir;
  auto& world = dist::world();
  const std::string single = dir.path("ddp.safetensors"), sharded = dir.path("z3");
  const std::string ddp = config_json(0, 2, 1), z3 = config_json(3, 2, 1, false, 2500, R"(, "stage3_param_persistence_threshold": 0)");
  ZeroRun run(ddp, &world, 11);
  run.train(3);
  if (world.rank() == 0) runtime::save_checkpoint(single, *run.engine, run.ds.tokenizer(), "run-a");  // stage 0: rank 0 writes
  world.barrier();
  const std::vector<float> uninterrupted = run.train(3);

  ZeroRun at3(z3, &world, 99);
  runtime::resume_from(single, *at3.engine);  // the whole state, cut into this rank's pieces
  std::vector<float> losses = at3.train(1);
  runtime::save_checkpoint(sharded, *at3.engine, at3.ds.tokenizer(), "run-b");
  ZeroRun back(ddp, &world, 77);
  runtime::resume_from(sharded, *back.engine);  // and put back together for DDP
  for (float l : back.train(2)) losses.push_back(l);
  ASSERT_EQ(losses.size(), uninterrupted.size());
  for (std::size_t s = 0; s < losses.size(); ++s)
    EXPECT_NEAR(losses[s], uninterrupted[s], 1e-5 * uninterrupted[s]) << "step " << s + 4;
}

TEST(L06_ShardedCheckpoint, Fp16ResumeKeepsTheLossScaleAndTheSkippedSteps) {
  SharedDir dir;
  auto& world = dist::world();
  // 2^40 overflows at first: steps are skipped and the scale comes down while the save is taken.
  const std::string json = zero_test::with_fp16(config_json(3, 2, 1, false, 2500, R"(, "stage3_param_persistence_threshold": 0)"),
                                                R"(, "initial_scale_power": 40, "hysteresis": 1)");
  const std::string path = dir.path("fp16");
  ZeroRun run(json, &world, 11);
  run.train(3);
  ASSERT_GT(run.engine->skipped_steps(), 0);
  runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");
  const double scale = run.engine->loss_scaler()->scale();
  const std::int64_t skipped = run.engine->skipped_steps();
  const std::vector<float> uninterrupted = run.train(6);

  ZeroRun resumed(json, &world, 99);
  runtime::resume_from(path, *resumed.engine);
  EXPECT_EQ(resumed.engine->loss_scaler()->scale(), scale);
  EXPECT_EQ(resumed.engine->skipped_steps(), skipped);
  EXPECT_EQ(resumed.train(6), uninterrupted) << "the same scales, skips and learning rates";
  EXPECT_EQ(resumed.engine->skipped_steps(), run.engine->skipped_steps());
}
