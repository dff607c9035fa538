#pragma once
// What the ZeRO suites share: a baby GPT config whose shards cut through parameters, and the
// equivalence of a stage on N ranks with one rank accumulating over N micro-batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dist/process_group.h"
#include "optim/adamw.h"
#include "runtime/checkpoint_manifest.h"
#include "train_util.h"
#include "zero/partition.h"
#include "zero/stage3.h"

namespace zero_test {

// Parameter sizes that do not all divide by N (the LayerNorm and bias vectors of n_embd = 24, the
// vocabulary's rows), so shards cut through parameters and buckets get padding.
inline std::string config_json(int stage, int micro, int accum, bool bf16 = false, std::int64_t bucket = 2500,
                               const std::string& zero_extra = "") {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro) +
         R"(, "gradient_accumulation_steps": )" + std::to_string(accum) + R"(, "gradient_clipping": 1.0,)" +
         (bf16 ? R"( "bf16": {"enabled": true},)" : "") + R"(
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-3, "warmup_num_steps": 5}},
    "zero_optimization": {"stage": )" + std::to_string(stage) + R"(, "reduce_bucket_size": )" + std::to_string(bucket) +
         zero_extra + R"(},
    "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 24, "block_size": 16},
    "training": {"steps": 20, "seed": 11}})";
}

/// `json` (config_json's text) with fp16 on; `fp16` the section's other members.
inline std::string with_fp16(std::string json, const std::string& fp16 = "") {
  const std::string at = R"("gradient_clipping": 1.0,)";
  json.insert(json.find(at) + at.size(), R"( "fp16": {"enabled": true)" + fp16 + "},");
  return json;
}

using ZeroRun = mt_test::TrainRun;

/// The whole model's parameters, flattened in named_parameters() order; at ZeRO-3 every unit is gathered for the
/// read and released again.
inline std::vector<float> all_params(ZeroRun& run) {
  auto* stage3 = const_cast<minitorch::zero::Stage3*>(run.engine->strategy_as<minitorch::zero::Stage3>());
  if (stage3) stage3->gather_all();
  std::vector<float> p = run.params();
  if (stage3) stage3->release_all();
  return p;
}

/// |a - b| / |b| in the 2-norm over all elements.
inline double rel_norm(const std::vector<float>& a, const std::vector<float>& b) {
  double d2 = 0, n2 = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    d2 += d * d;
    n2 += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(d2 / n2);
}

/// `json` (a stage >= 1 config for N ranks) trains like stage 0 on one rank with N times the
/// accumulation (`ref_json`), over 20 steps: losses and final parameters within `tol`.
inline void expect_equivalent(const std::string& json, const std::string& ref_json, double tol) {
  auto& world = minitorch::dist::world();
  // Each rank starts from a different init: the stage must broadcast rank 0's weights.
  ZeroRun run(json, &world, 11 + 1000 * static_cast<std::uint64_t>(world.rank()));
  ZeroRun ref(ref_json, nullptr, 11);
  ASSERT_EQ(run.cfg.train_batch_size, ref.cfg.train_batch_size);
  for (int s = 0; s < 20; ++s) {
    const float a = run.engine->train_batch(*run.sampler), b = ref.engine->train_batch(*ref.sampler);
    EXPECT_LT(std::abs(a - b) / std::abs(b), tol) << "step " << s << ": N ranks " << a << " vs 1 rank " << b;
  }
  EXPECT_LT(rel_norm(run.params(), ref.params()), tol) << "parameters after 20 steps, rank " << world.rank();
}

/// Calls and elements per collective ("all_gather" -> (calls, elements)) of one train_batch of `run`.
inline std::map<std::string, std::pair<std::int64_t, std::int64_t>> traffic_of_one_step(ZeroRun& run) {
  auto& world = minitorch::dist::world();
  const std::size_t first = world.stats().log.size();
  run.engine->train_batch(*run.sampler);
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> per_op;
  for (std::size_t i = first; i < world.stats().log.size(); ++i) {
    per_op[world.stats().log[i].op].first += 1;
    per_op[world.stats().log[i].op].second += world.stats().log[i].elements;
  }
  return per_op;
}

/// The largest |g - want| / max |want| over this rank's pieces: their gradients (the reduced shard,
/// through the optimizer's groups) against the 1-rank gradients of `ref` at the same elements. Adds a
/// failure for a piece the partition does not know, one of the wrong size, or a piece left out.
inline double shard_gradient_error(const minitorch::zero::Partition& part, const minitorch::optim::AdamW& optimizer,
                                   const minitorch::nn::GPT& ref) {
  std::map<std::string, const minitorch::zero::ShardPiece*> by_name;
  for (const minitorch::zero::ShardPiece& p : part.pieces()) by_name[p.name] = &p;
  double worst = 0, scale = 0;
  std::size_t seen = 0;
  for (const minitorch::optim::ParamGroup& g : optimizer.param_groups())
    for (const auto& [name, piece] : g.params) {
      if (!by_name.count(name)) {
        ADD_FAILURE() << name << " is not a piece of the partition";
        continue;
      }
      const minitorch::zero::ShardPiece& p = *by_name[name];
      const std::vector<float> got = piece.grad().to_vector();
      const std::vector<float> whole = ref.named_parameters()[p.param].second.grad().to_vector();
      EXPECT_EQ(piece.grad().numel(), p.range.size()) << p.name;
      for (std::int64_t k = 0; k < p.range.size() && k < piece.grad().numel(); ++k) {
        const double want = whole[static_cast<std::size_t>(p.param_offset + k)];
        worst = std::max(worst, std::abs(got[static_cast<std::size_t>(k)] - want));
        scale = std::max(scale, std::abs(want));
      }
      ++seen;
    }
  EXPECT_EQ(seen, part.pieces().size());
  return worst / scale;
}

/// One directory every rank of the job sees under the same name (rank 0 makes and removes it).
/// Why a ZeRO-3 test stops on one rank: a stage on one data-parallel rank runs as stage 0 (runtime::Engine::warnings),
/// so there is no Stage3 to look at.
inline constexpr const char* kNeedsTwoRanks =
    "ZeRO-3 shards over 2 or more ranks (on one rank it runs as stage 0): run this test under mpirun -np 2 or more";

struct SharedDir {
  std::string dir;
  SharedDir() {
    auto& world = minitorch::dist::world();
    dir = (std::filesystem::temp_directory_path() / ("minitorch_sharded_" + minitorch::runtime::new_run_id(world))).string();
    if (world.rank() == 0) std::filesystem::create_directories(dir);
    world.barrier();
  }
  ~SharedDir() {
    minitorch::dist::world().barrier();
    if (minitorch::dist::world().rank() == 0) std::filesystem::remove_all(dir);
  }
  SharedDir(const SharedDir&) = delete;
  SharedDir& operator=(const SharedDir&) = delete;
  std::string path(const std::string& name) const { return dir + "/" + name; }
};

}  // namespace zero_test
