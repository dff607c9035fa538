// A resume for every ZeRO stage × precision × offload (issue 41; offload_param, issue 43): on the ranks that saved it, the run goes on
// bit for bit as if never stopped, and a save taken right after the resume holds the very tensors of the save
// it came from (the f32 masters of a 16-bit run included); on one rank, it goes on within the N-vs-1
// equivalence bounds of docs/design.md §8 (f32 1e-5, bf16 and fp16 2e-2).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "minitorch/safetensors.h"
#include "runtime/save_and_resume.h"
#include "zero_mpi/zero_test_util.h"

using namespace minitorch;
using zero_test::SharedDir;
using zero_test::ZeroRun;
namespace fs = std::filesystem;

namespace {

enum class Precision { f32, bf16, fp16 };
/// What is offloaded: nothing, the optimizer (ZeRO-Offload), the optimizer and the parameters (stage 3), or the
/// optimizer and the parameters to NVMe (stage 3, their swap files under nvme_path_).
enum class Offload { none, optimizer, optimizer_and_param, nvme };
std::string nvme_path_;  // the test's folder, shared by its ranks

struct Combination {
  int stage;
  Precision precision;
  Offload offload;
  std::string name() const {
    std::ostringstream os;
    os << "stage " << stage << (precision == Precision::f32 ? " f32" : precision == Precision::bf16 ? " bf16" : " fp16")
       << (offload == Offload::optimizer             ? " offload"
           : offload == Offload::optimizer_and_param ? " offload param"
           : offload == Offload::nvme                ? " nvme"
                                                     : "");
    return os.str();
  }
  /// The config: micro-batch 2 × `accumulation` per rank, a baby GPT.
  std::string json(int accumulation) const {
    std::string zero = stage == 3 ? R"(, "stage3_param_persistence_threshold": 0)" : "";
    if (offload == Offload::nvme)
      zero += R"(, "sub_group_size": 1000, "offload_optimizer": {"device": "nvme", "nvme_path": ")" + nvme_path_ +
              R"("}, "offload_param": {"device": "nvme", "nvme_path": ")" + nvme_path_ + R"("})";
    else if (offload != Offload::none)
      zero += R"(, "offload_optimizer": {"device": "cpu"})";
    if (offload == Offload::optimizer_and_param) zero += R"(, "offload_param": {"device": "cpu"})";
    std::string j = zero_test::config_json(stage, 2, accumulation, precision == Precision::bf16, 2500, zero);
    // A learning rate from the first step on, so the f32 masters part from the 16-bit weights before the save.
    const std::string min_lr = R"("warmup_min_lr": 0,)";
    j.replace(j.find(min_lr), min_lr.size(), R"("warmup_min_lr": 1e-3,)");
    return precision == Precision::fp16 ? zero_test::with_fp16(j) : j;
  }
};

/// Stages 0..3 × {f32, bf16, fp16} × offload {none, the optimizer at stages 1-3, and the parameters or NVMe at
/// stage 3}.
std::vector<Combination> every_combination() {
  std::vector<Combination> all;
  for (int stage : {0, 1, 2, 3})
    for (Precision p : {Precision::f32, Precision::bf16, Precision::fp16})
      for (Offload offload : {Offload::none, Offload::optimizer, Offload::optimizer_and_param, Offload::nvme})
        if (offload == Offload::none || (offload == Offload::optimizer && stage > 0) || stage == 3)
          all.push_back({stage, p, offload});
  return all;
}

/// Saves `run` at `path`: every rank for a sharded save, rank 0 alone for a single file.
void save(ZeroRun& run, const std::string& path) {
  auto& world = dist::world();
  if (run.engine->plan().sharded_save() || world.rank() == 0)
    runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");
  world.barrier();
}

/// Every tensor of the save at `path` ("<shard file, or model / optim>:<name>" -> its values), read on this rank.
std::map<std::string, std::vector<float>> tensors_of(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> files;  // (role, file)
  if (fs::is_directory(path)) {
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ".safetensors") files.emplace_back(e.path().filename().string(), e.path().string());
  } else {
    files = {{"model", path}};
    if (fs::exists(path + ".optim")) files.emplace_back("optim", path + ".optim");
  }
  std::map<std::string, std::vector<float>> all;
  for (const auto& [role, f] : files)
    for (const auto& [name, t] : load_safetensors(f).tensors) all[role + ":" + name] = t.to_vector();
  return all;
}

}  // namespace

TEST(L06_ResumeEveryCombination, OnTheSameRanksBitIdenticalAndOnOneRankWithinTheEquivalenceBound) {
  SharedDir dir;
  nvme_path_ = dir.dir;
  auto& world = dist::world();
  auto alone = world.split(world.rank(), 0);  // every rank a group of its own: the "one rank" run
  int k = 0;
  for (const Combination& c : every_combination()) {
    SCOPED_TRACE(c.name());
    const std::string path = dir.path("c" + std::to_string(k)), again = dir.path("again" + std::to_string(k++));
    ZeroRun run(c.json(1), &world, 11);
    run.train(2);
    save(run, path);
    const std::vector<float> uninterrupted = run.train(2);

    ZeroRun resumed(c.json(1), &world, 99);  // another init: every value must come from the save
    const runtime::ResumeInfo info = runtime::resume_from(path, *resumed.engine);
    EXPECT_TRUE(info.warnings.empty());
    save(resumed, again);  // no step between: the same tensors, masters and all
    if (world.rank() == 0) {
      const auto before = tensors_of(path), after = tensors_of(again);
      EXPECT_EQ(before.size(), after.size());
      for (const auto& [name, values] : before) EXPECT_TRUE(after.count(name) && after.at(name) == values) << name << " changed";
    }
    EXPECT_EQ(resumed.train(2), uninterrupted) << "losses must be equal to the bit";

    // One rank with N times the accumulation: the same micro-batches per step, summed in another order.
    const double bound = c.precision == Precision::f32 ? 1e-5 : 2e-2;
    ZeroRun one(c.json(world.size()), alone.get(), 99);
    runtime::resume_from(path, *one.engine);
    const std::vector<float> losses = one.train(2);
    for (std::size_t s = 0; s < losses.size(); ++s)
      EXPECT_LT(std::abs(losses[s] - uninterrupted[s]) / std::abs(uninterrupted[s]), bound) << "step " << s + 3;
    world.barrier();
  }
}
