// Checkpoints are one complete save or nothing: the manifest, what --resume refuses (each bad pair
// built by copying files between two saves), the rank-count warning, and cleanup after a killed save.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

#include "runtime/checkpoint.h"
#include "runtime/save_and_resume.h"
#include "runtime/save_target.h"
#include "test_util.h"
#include "train_util.h"

using namespace minitorch;
using mt_test::contains;
using mt_test::error_of;
using mt_test::TrainRun;
namespace fs = std::filesystem;

namespace {
const std::string kConfig = R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3}},
    "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16},
    "training": {"steps": 10, "seed": 5}})";

/// A run trained `steps` steps and saved to `dir/name` under `run_id`; returns the path.
std::string trained_save(const mt_test::TempDir& dir, const std::string& name, const std::string& run_id, int steps) {
  TrainRun r(kConfig);
  r.train(steps);
  runtime::save_checkpoint(dir.path(name), *r.engine, r.ds.tokenizer(), run_id);
  return dir.path(name);
}

/// The error resume_from() gives for `path` in a fresh engine ("(no error)" if it resumes).
std::string resume_error(const std::string& path) {
  TrainRun fresh(kConfig);
  return error_of([&] { runtime::resume_from(path, *fresh.engine); });
}

/// A run trained 2 steps and saved at `p`, then one step more: its next save is step 3's.
std::unique_ptr<TrainRun> saved_at_step_2_then_stepped(const std::string& p) {
  auto r = std::make_unique<TrainRun>(kConfig);
  r->train(2);
  runtime::save_checkpoint(p, *r->engine, r->ds.tokenizer(), "run-a");
  r->train(1);
  return r;
}

/// Makes the save at `p` one that `ranks` data-parallel ranks wrote: the manifest and the facts its model
/// file carries (runtime/checkpoint_manifest.h: manifest_facts) say so, and the sizes and checksums follow.
void saved_on_ranks(const std::string& p, int ranks) {
  runtime::CheckpointManifest m = runtime::read_manifest(p);
  m.data_parallel_size = ranks;
  SafetensorsFile f = load_safetensors(p);
  f.metadata["manifest_facts"] = runtime::manifest_facts(m);
  save_safetensors(p, f.tensors, f.metadata);
  const std::string name = m.model.name;
  m.model = runtime::describe_file(p);
  m.model.name = name;
  runtime::write_manifest(p, m);
}

void copy_over(const std::string& from, const std::string& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}
}  // namespace

TEST(L03_Checkpoint, ManifestNamesBothFilesWithSizesChecksumsRunAndStep) {
  mt_test::TempDir dir;
  auto p = trained_save(dir, "a.safetensors", "run-a", 3);
  auto j = nlohmann::json::parse(std::ifstream(runtime::manifest_path(p)));
  EXPECT_EQ(j["run_id"], "run-a");
  EXPECT_EQ(j["step"], 3);
  EXPECT_EQ(j["data_parallel_size"], 1);
  auto m = runtime::read_manifest(p);
  EXPECT_EQ(m.model.name, "a.safetensors");
  EXPECT_EQ(m.model.bytes, fs::file_size(p));
  EXPECT_EQ(m.model.fnv1a64, runtime::fnv1a64_file(p));
  ASSERT_TRUE(m.optim.has_value());
  EXPECT_EQ(m.optim->name, "a.safetensors.optim");
  EXPECT_EQ(m.optim->bytes, fs::file_size(p + ".optim"));
  EXPECT_EQ(m.optim->fnv1a64, runtime::fnv1a64_file(p + ".optim"));
  EXPECT_EQ(m.optim->optimizer_steps, 3);
  EXPECT_NE(m.model.fnv1a64, m.optim->fnv1a64);
  EXPECT_EQ(resume_error(p), "(no error)");
}

TEST(L03_Checkpoint, Fnv1a64MatchesTheReferenceValues) {
  mt_test::TempDir dir;
  EXPECT_EQ(runtime::fnv1a64_file(dir.write("empty", "")), 0xcbf29ce484222325ull);
  EXPECT_EQ(runtime::fnv1a64_file(dir.write("a", "a")), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(runtime::fnv1a64_file(dir.write("foobar", "foobar")), 0x85944171f73967e8ull);
}

TEST(L03_Checkpoint, ResumeWithoutManifestIsOneClearErrorButEvalStillLoads) {
  mt_test::TempDir dir;
  auto p = trained_save(dir, "a.safetensors", "run-a", 2);
  fs::remove(runtime::manifest_path(p));
  auto e = resume_error(p);
  EXPECT_TRUE(contains(e, "manifest '" + runtime::manifest_path(p) + "' is missing")) << e;
  EXPECT_TRUE(contains(e, "not one complete save")) << e;
  runtime::CheckpointInfo info;
  ASSERT_NE(runtime::load_model(p, &info), nullptr);  // minitorch-eval / -sample need the model file only
  EXPECT_EQ(info.step, 2);
}

TEST(L03_Checkpoint, ResumeRefusesAnOptimFromAnotherRun) {
  mt_test::TempDir dir;
  auto a = trained_save(dir, "a.safetensors", "run-a", 3);
  auto b = trained_save(dir, "b.safetensors", "run-b", 3);  // same weights and step, other run
  copy_over(b + ".optim", a + ".optim");
  auto e = resume_error(a);
  EXPECT_TRUE(contains(e, "optimizer state '" + a + ".optim' is from another run (run-b, the manifest says run-a)")) << e;
}

TEST(L03_Checkpoint, ResumeRefusesATruncatedOptim) {
  mt_test::TempDir dir;
  auto a = trained_save(dir, "a.safetensors", "run-a", 3);
  fs::resize_file(a + ".optim", fs::file_size(a + ".optim") / 2);
  auto e = resume_error(a);
  EXPECT_TRUE(contains(e, "optimizer state '" + a + ".optim' is ")) << e;
  EXPECT_TRUE(contains(e, "truncated")) << e;
}

TEST(L03_Checkpoint, ResumeRefusesAStaleOptimOrModelFromAnotherStep) {
  mt_test::TempDir dir;
  TrainRun r(kConfig);
  r.train(2);
  auto s2 = dir.path("s2.safetensors"), s3 = dir.path("s3.safetensors");
  runtime::save_checkpoint(s2, *r.engine, r.ds.tokenizer(), "run-a");
  r.train(1);
  runtime::save_checkpoint(s3, *r.engine, r.ds.tokenizer(), "run-a");
  ASSERT_EQ(fs::file_size(s2 + ".optim"), fs::file_size(s3 + ".optim"));  // only the content tells

  copy_over(s2 + ".optim", s3 + ".optim");
  auto e = resume_error(s3);
  EXPECT_TRUE(contains(e, "'" + s3 + ".optim' is stale: it holds 2 optimizer steps but the save had 3")) << e;

  runtime::save_checkpoint(s3, *r.engine, r.ds.tokenizer(), "run-a");
  copy_over(s2, s3);
  e = resume_error(s3);
  EXPECT_TRUE(contains(e, "model file is from step 2 but the manifest is from step 3")) << e;
}

TEST(L03_Checkpoint, ResumeRefusesChangedBytesThroughTheChecksum) {
  mt_test::TempDir dir;
  auto a = trained_save(dir, "a.safetensors", "run-a", 3);
  {
    std::fstream f(a + ".optim", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-3, std::ios::end);  // inside the last tensor: the file still parses
    const char c = static_cast<char>(f.get());
    f.seekp(-3, std::ios::end);
    f.put(static_cast<char>(~c));
  }
  auto e = resume_error(a);
  EXPECT_TRUE(contains(e, "'" + a + ".optim' does not match the manifest's checksum")) << e;
}

TEST(L03_Checkpoint, FailedSaveLeavesThePreviousSaveWholeAndResumable) {
  mt_test::TempDir dir;
  auto p = dir.path("a.safetensors");
  const auto run = saved_at_step_2_then_stepped(p);
  TrainRun& r = *run;
  // The new model file's temp path is a directory: step 3's .optim is written (as a.safetensors.partial.optim),
  // the model write fails, as a full disk or a kill there would.
  fs::create_directories(p + ".partial.tmp." + std::to_string(::getpid()) + "/x");
  EXPECT_NE(error_of([&] { runtime::save_checkpoint(p, *r.engine, r.ds.tokenizer(), "run-a"); }), "(no error)");
  EXPECT_TRUE(fs::exists(runtime::manifest_path(p))) << "the previous save's manifest stays";
  TrainRun fresh(kConfig);
  EXPECT_EQ(runtime::resume_from(p, *fresh.engine).step, 2);
  fs::remove_all(p + ".partial.tmp." + std::to_string(::getpid()));
  runtime::save_checkpoint(p, *r.engine, r.ds.tokenizer(), "run-a");  // the next save clears what the failed one left
  EXPECT_FALSE(fs::exists(p + ".partial.optim"));
  EXPECT_EQ(runtime::check_complete_save(p).step, 3);
}

TEST(L03_Checkpoint, ASaveKilledAtAnyStepOfItsSwitchLeavesACompleteSave) {
  // runtime/save_target.h: before step k of the switch, a throw stands for a kill. What --resume finds:
  // k = 0 the old save (step 2) at PATH; k = 1..3 the new one (step 3) at PATH.partial, said so; k = 4 the new at PATH.
  for (int k = 0; k <= 4; ++k) {
    SCOPED_TRACE("killed before step " + std::to_string(k));
    mt_test::TempDir dir;
    auto p = dir.path("a.safetensors");
    const auto run = saved_at_step_2_then_stepped(p);
    TrainRun& r = *run;
    EXPECT_EQ(error_of([&] {
                runtime::save_single_file_checkpoint(p, *r.engine, r.ds.tokenizer(), "run-a", [&](int step) {
                  if (step == k) throw std::runtime_error("killed");
                });
              }),
              "killed");
    const runtime::LocatedSave where = runtime::locate_save(p);
    EXPECT_EQ(where.path, k >= 1 && k <= 3 ? p + ".partial" : p);
    EXPECT_EQ(where.note.empty(), where.path == p) << where.note;
    TrainRun fresh(kConfig);
    const runtime::ResumeInfo info = runtime::resume_from(p, *fresh.engine);
    EXPECT_EQ(info.step, k == 0 ? 2 : 3);
    if (k >= 1 && k <= 3) {
      ASSERT_EQ(info.warnings.size(), 1u);
      EXPECT_TRUE(contains(info.warnings[0], "using '" + p + ".partial', the complete new save beside it"))
          << info.warnings[0];
    }
    runtime::save_checkpoint(p, *r.engine, r.ds.tokenizer(), "run-a");  // cleans up, lands whole
    for (const char* left : {".partial", ".partial.optim", ".partial.manifest.json"})
      EXPECT_FALSE(fs::exists(p + left)) << left;
    EXPECT_EQ(runtime::locate_save(p).path, p);
    EXPECT_EQ(resume_error(p), "(no error)");
  }
}

TEST(L03_Checkpoint, ASaveNeverReplacesAFileNoSaveWrote) {
  mt_test::TempDir dir;
  TrainRun r(kConfig);
  r.train(1);
  auto save = [&](const std::string& p) { return error_of([&] { runtime::save_checkpoint(p, *r.engine, r.ds.tokenizer(), "run-a"); }); };
  // A user's file at PATH, at PATH.manifest.json, at PATH.partial: each refused, each left as it was.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"notes.txt", "notes.txt"},
      {"b.safetensors", "b.safetensors.manifest.json"},
      {"c.safetensors", "c.safetensors.partial"},
      {"d.safetensors", "d.safetensors.optim"}};
  for (const auto& [out, users] : cases) {
    const std::string file = dir.write(users, "{\"name\": \"my notes\"}");
    const std::string why = runtime::save_target_problem(dir.path(out), runtime::SaveKind::single_file);
    EXPECT_TRUE(contains(why, "--out '" + dir.path(out) + "': '" + file + "' is not a")) << why;
    EXPECT_EQ(save(dir.path(out)), why);
    EXPECT_EQ(mt_test::read_text(file), "{\"name\": \"my notes\"}") << users;
  }
  fs::create_directories(dir.path("folder"));
  EXPECT_TRUE(contains(save(dir.path("folder")), "is a directory"));
  // A save's own files are replaced: a model file (a consolidated one too), a save's leftovers.
  auto p = dir.path("ok.safetensors");
  runtime::save_model(p, r.engine->model(), r.ds.tokenizer(), 0);
  EXPECT_EQ(runtime::save_target_problem(p, runtime::SaveKind::single_file), "");
  EXPECT_EQ(save(p), "(no error)");
  EXPECT_EQ(save(p), "(no error)");
  EXPECT_EQ(resume_error(p), "(no error)");
}

TEST(L03_Checkpoint, AnEditedManifestFieldIsRefusedNamingIt) {
  mt_test::TempDir dir;
  auto a = trained_save(dir, "a.safetensors", "run-a", 3);
  const std::string original = mt_test::read_text(runtime::manifest_path(a));
  for (const auto& [field, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"gradient_accumulation_steps", 2}, {"train_micro_batch_size_per_gpu", 8}, {"data_parallel_size", 4}}) {
    auto j = nlohmann::json::parse(original);
    j[field] = value;  // not covered by the checksums, which cover the files
    std::ofstream(runtime::manifest_path(a)) << j.dump();
    const std::string e = resume_error(a);
    EXPECT_TRUE(contains(e, "the manifest's " + field + " is " + value.dump() + " but the save wrote")) << e;
    EXPECT_TRUE(contains(e, "the manifest was edited or is from another save")) << e;
  }
  std::ofstream(runtime::manifest_path(a)) << original;
  EXPECT_EQ(resume_error(a), "(no error)");
}

TEST(L03_Checkpoint, ResumeOnAnotherNumberOfRanksWarnsThatTheDataOrderChanges) {
  mt_test::TempDir dir;
  auto a = trained_save(dir, "a.safetensors", "run-a", 3);
  {
    TrainRun same(kConfig);
    auto info = runtime::resume_from(a, *same.engine);
    EXPECT_TRUE(info.warnings.empty());
    EXPECT_EQ(info.run_id, "run-a");
    EXPECT_EQ(same.engine->global_steps(), 3);
  }
  saved_on_ranks(a, 4);  // as if saved by `mpirun -np 4`
  TrainRun one(kConfig);
  auto info = runtime::resume_from(a, *one.engine);
  ASSERT_EQ(info.warnings.size(), 1u);
  EXPECT_TRUE(contains(info.warnings[0], "saved on 4 data-parallel rank(s) with micro-batch 2 x accumulation 1 and "
                                         "resumes on 1 with 2 x 1: the data order changes from here on"))
      << info.warnings[0];
  EXPECT_EQ(one.engine->global_steps(), 3);
  // 1 rank x accumulation 4 trains each step on the micro-batches of 4 ranks x 1: same data, other sums.
  std::string accum4 = kConfig;
  accum4.replace(accum4.find("\"gradient_accumulation_steps\": 1"), 32, "\"gradient_accumulation_steps\": 4");
  TrainRun four(accum4);
  info = runtime::resume_from(a, *four.engine);
  ASSERT_EQ(info.warnings.size(), 1u);
  EXPECT_TRUE(contains(info.warnings[0], "the data order changes among the ranks (each step sees the same micro-batches"))
      << info.warnings[0];
}

TEST(L03_Checkpoint, SaveRemovesTempFilesOfAKilledSaveAndNothingElse) {
  mt_test::TempDir dir;
  const std::vector<std::string> stale = {"a.safetensors.tmp.12345", "a.safetensors.optim.tmp.7",
                                          "a.safetensors.manifest.json.tmp.999999", "a.safetensors.partial.tmp.3",
                                          "a.safetensors.partial.optim.tmp.42", "a.safetensors.partial.manifest.json.tmp.5"};
  const std::vector<std::string> kept = {"a.safetensors.tmp.", "a.safetensors.tmp.12a", "a.safetensors.tmp.1.bak",
                                         "xa.safetensors.tmp.5", "b.safetensors.tmp.5", "a.safetensors.tmpx.5",
                                         "a.safetensors.report.tmp.5", "a.safetensors.probe.5"};
  for (const auto& n : stale) dir.write(n, "left by a killed save");
  for (const auto& n : kept) dir.write(n, "not ours");
  trained_save(dir, "a.safetensors", "run-a", 1);
  for (const auto& n : stale) EXPECT_FALSE(fs::exists(dir.path(n))) << n;
  for (const auto& n : kept) EXPECT_TRUE(fs::exists(dir.path(n))) << n;
  EXPECT_EQ(resume_error(dir.path("a.safetensors")), "(no error)");
}

TEST(L03_Checkpoint, ManifestFieldsAreCheckedForTypeAndRange) {
  // Found while writing the manifest fuzz target: nlohmann's get<> took "step": 2.5 as 2,
  // "bytes": -1 as 2^64 - 1 and "data_parallel_size": 4294967297 as 1, and std::stoull took
  // "0x00000000000000ff" or "-000000000000001" as checksums; each is now one clear error.
  const std::string good = R"({"format": "minitorch-manifest-1", "run_id": "r", "step": 3, "data_parallel_size": 2,
      "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
      "files": {"model": {"name": "m", "bytes": 10, "fnv1a64": "00000000000000ff"},
                "optim": {"name": "m.optim", "bytes": 20, "fnv1a64": "ABCDEF0123456789", "optimizer_steps": 3}}})";
  const runtime::CheckpointManifest m = runtime::parse_manifest(good, "ck.safetensors");
  EXPECT_EQ(m.step, 3);
  EXPECT_EQ(m.data_parallel_size, 2);
  EXPECT_EQ(m.model.fnv1a64, 0xffu);
  ASSERT_TRUE(m.optim.has_value());
  EXPECT_EQ(m.optim->fnv1a64, 0xABCDEF0123456789ull);
  const std::string prefix =
      "cannot resume from 'ck.safetensors': its manifest 'ck.safetensors.manifest.json' is unreadable (";
  const std::tuple<std::string, std::string, std::string> cases[] = {
      {R"("step": 3)", R"("step": 2.5)", "step must be an integer from 0 to 9223372036854775807, got 2.5"},
      {R"("step": 3)", R"("step": -1)", "step must be an integer from 0 to 9223372036854775807, got -1"},
      {R"("step": 3, )", "", "step is missing"},
      {R"("data_parallel_size": 2)", R"("data_parallel_size": 4294967297)",
       "data_parallel_size must be an integer from 1 to 2147483647, got 4294967297"},
      {R"("data_parallel_size": 2)", R"("data_parallel_size": 0)",
       "data_parallel_size must be an integer from 1 to 2147483647, got 0"},
      {R"("gradient_accumulation_steps": 1)", R"("gradient_accumulation_steps": 0)",
       "gradient_accumulation_steps must be an integer from 1 to 9223372036854775807, got 0"},
      {R"("run_id": "r")", R"("run_id": 5)", "run_id must be a string, got 5"},
      {R"("bytes": 10)", R"("bytes": -1)", "files.model.bytes must be a non-negative integer, got -1"},
      {"00000000000000ff", "0x000000000000ff", "files.model.fnv1a64 '0x000000000000ff' is not 16 hex digits"},
      {"00000000000000ff", "-00000000000000f", "files.model.fnv1a64 '-00000000000000f' is not 16 hex digits"},
      {R"("optimizer_steps": 3)", R"("optimizer_steps": -3)",
       "files.optim.optimizer_steps must be an integer from 0 to 9223372036854775807, got -3"},
      {R"("files": {)", R"("files": 7, "x": {)", "files must be an object, got 7"},
  };
  for (const auto& [from, to, what] : cases) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    const std::string e = error_of([&] { runtime::parse_manifest(text, "ck.safetensors"); });
    EXPECT_EQ(e, prefix + what + "); resume from a complete save") << to;
  }
  // Nesting is bounded as in every other JSON minitorch reads.
  const std::string e = error_of([] { runtime::parse_manifest(std::string(100000, '[') + std::string(100000, ']'), "c"); });
  EXPECT_TRUE(contains(e, "the manifest: JSON nested deeper than 64 levels")) << e.substr(0, 300);
}

TEST(L03_Checkpoint, StepCountsInMetadataAreDecimalDigitsOnly) {
  // Found while writing the checkpoint and optimizer-state fuzz targets: std::stoll took a step of
  // "12abc" as 12 and " -3" as -3.
  mt_test::TempDir dir;
  auto p = trained_save(dir, "a.safetensors", "run-a", 2);
  SafetensorsFile f = load_safetensors(p);
  ASSERT_NE(runtime::load_model(f), nullptr);  // the overload load_model(path) reads into
  for (const char* bad : {"12abc", " -3", "-3", "", "99999999999999999999"}) {
    f.metadata["step"] = bad;
    EXPECT_EQ(error_of([&] { runtime::load_model(f); }),
              "checkpoint '" + p + "' has bad metadata: step '" + bad + "' is not a count (decimal digits, at most "
              "9223372036854775807)");
  }
  SafetensorsFile o = load_safetensors(p + ".optim");
  EXPECT_EQ(runtime::optimizer_steps_of(o), 2);
  o.metadata["optimizer_steps"] = "2x";
  EXPECT_EQ(error_of([&] { runtime::optimizer_steps_of(o); }),
            "optimizer state '" + p + ".optim' has no valid optimizer_steps metadata (optimizer_steps '2x' is not a "
            "count (decimal digits, at most 9223372036854775807))");
  o.metadata.erase("optimizer_steps");
  EXPECT_EQ(error_of([&] { runtime::optimizer_steps_of(o); }),
            "optimizer state '" + p + ".optim' has no valid optimizer_steps metadata (the key is missing)");
}

namespace {
/// The manifest of a step-3 sharded save of a one-tensor model on a `dp` x `pipeline_stages` grid (the
/// shards' sizes and checksums made up).
runtime::ShardedManifest step_3_manifest(int zero_stage, int dp, int pipeline_stages) {
  runtime::ShardedManifest m;
  m.run_id = "run-a";
  m.step = 3;
  m.zero_stage = zero_stage;
  m.data_parallel_size = dp;
  m.pipeline_stages = pipeline_stages;
  m.train_micro_batch_size_per_gpu = 2;
  m.gradient_accumulation_steps = 4;
  m.dtype = "f32";
  m.params = {{"transformer.wte.weight", {65, 24}}};
  m.numel = 65 * 24;
  for (int r = 0; r < m.ranks(); ++r) m.shards.push_back({runtime::shard_file_name(r, m.ranks()), 100, 1, 0});
  return m;
}
}  // namespace

// A pipeline's sharded manifest: pipeline_stages beside data_parallel_size, one shard per rank of the grid;
// a save from before pipelines (no pipeline_stages) reads as one stage; stage 0 is sharded only for pipelines.
TEST(L09_PipelineManifest, RoundTripsAndChecksTheGrid) {
  mt_test::TempDir dir;
  const runtime::ShardedManifest m = step_3_manifest(0, 2, 2);
  runtime::write_sharded_manifest(dir.dir.string(), m);
  const std::string text = mt_test::read_text(runtime::sharded_manifest_path(dir.dir.string()));
  const runtime::ShardedManifest back = runtime::parse_sharded_manifest(text, "ck");
  EXPECT_EQ(back.pipeline_stages, 2);
  EXPECT_EQ(back.ranks(), 4);
  EXPECT_EQ(back.shards.back().name, "shard-00003-of-00004.safetensors");

  nlohmann::json j = nlohmann::json::parse(text);
  j["pipeline_stages"] = 1;
  EXPECT_TRUE(contains(error_of([&] { runtime::parse_sharded_manifest(j.dump(), "ck"); }),
                       "stage 0 with one pipeline stage is saved as a single file, not sharded"));
  j["zero_stage"] = 1;
  EXPECT_TRUE(contains(error_of([&] { runtime::parse_sharded_manifest(j.dump(), "ck"); }),
                       "shards must list one file per rank (2)"));
  j.erase("pipeline_stages");  // a save from before pipelines were saved: one stage
  j["shards"] = {j["shards"][0], j["shards"][1]};
  j["shards"][0]["name"] = runtime::shard_file_name(0, 2);
  j["shards"][1]["name"] = runtime::shard_file_name(1, 2);
  EXPECT_EQ(runtime::parse_sharded_manifest(j.dump(), "ck").pipeline_stages, 1);
}

// The sharded manifest names the ZeRO stage `zero_stage`, as the run report and the strategies do. Saves
// from before the rename say `stage`, in the manifest and in the facts each shard carries: both still read.
TEST(L06_ShardedManifest, WritesZeroStageAndStillReadsTheOldStageKey) {
  mt_test::TempDir dir;
  const runtime::ShardedManifest m = step_3_manifest(2, 2, 1);
  runtime::write_sharded_manifest(dir.dir.string(), m);
  const nlohmann::json written = nlohmann::json::parse(mt_test::read_text(runtime::sharded_manifest_path(dir.dir.string())));
  EXPECT_EQ(written.at("zero_stage"), 2);
  EXPECT_FALSE(written.contains("stage"));
  EXPECT_EQ(nlohmann::json::parse(runtime::manifest_facts(m)).at("zero_stage"), 2);

  nlohmann::json old = written;
  old["stage"] = old["zero_stage"];
  old.erase("zero_stage");
  EXPECT_EQ(runtime::parse_sharded_manifest(old.dump(), "ck").zero_stage, 2);
  nlohmann::json old_facts = nlohmann::json::parse(runtime::manifest_facts(m));
  old_facts["stage"] = old_facts["zero_stage"];
  old_facts.erase("zero_stage");
  EXPECT_EQ(runtime::facts_mismatch(m, old_facts.dump()), "");
  old_facts["stage"] = 1;
  EXPECT_EQ(runtime::facts_mismatch(m, old_facts.dump()), "the manifest's zero_stage is 2 but the save wrote 1");

  old["zero_stage"] = 2;  // both names: not what any save wrote
  EXPECT_TRUE(contains(error_of([&] { runtime::parse_sharded_manifest(old.dump(), "ck"); }),
                       "zero_stage and its old name stage are both given"));
}
