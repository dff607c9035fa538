// Gemini on 2 and 4 `sim` ranks (gemini/gemini.h): chunks of a fixed size, gathered and released by their tensors'
// states, train loss for loss as ZeRO-3 and as one rank accumulating N times as many micro-batches, with every
// static placement; the states follow the module hooks; the buffers are the chunks' fixed sizes.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "../zero_mpi/zero_test_util.h"
#include "gemini/gemini.h"
#include "minitorch/allocator.h"
#include "minitorch/events.h"
#include "runtime/report.h"
#include "runtime/save_and_resume.h"
#include "trace/frames.h"

using namespace minitorch;
using gemini::TensorState;
using zero_test::config_json;
using zero_test::ZeroRun;

namespace {

/// The baby test GPT (n_embd 24: about 16k parameters, the largest tensor 2304 elements) in chunks of 2400
/// elements — 8 chunks — with `extra` gemini keys.
std::string gemini_json(int micro, int accum, const std::string& extra = "") {
  std::string json = config_json(3, micro, accum);
  const std::string section = R"("gemini": {"chunk_config_dict": {"1": {"chunk_size": 2400}, "2": {"chunk_size": 2400},
                                                                  "4": {"chunk_size": 2400}})" + extra + "},";
  json.insert(json.find(R"("model")"), section);
  return json;
}

gemini::Gemini& gemini_of(ZeroRun& run) {
  auto* g = const_cast<gemini::Gemini*>(run.engine->strategy_as<gemini::Gemini>());
  if (!g) throw std::logic_error("the run's strategy is not Gemini");
  return *g;
}

std::vector<float> gathered_params(ZeroRun& run) {
  gemini_of(run).gather_all();
  std::vector<float> p = run.params();
  gemini_of(run).release_all();
  return p;
}

}  // namespace

TEST(L12_Gemini, TrainsAsOneRankWithNTimesTheAccumulation) {
  auto& world = dist::world();
  const int n = world.size();
  // Each rank starts from a different init: Gemini must broadcast rank 0's weights.
  ZeroRun run(gemini_json(2, 2), &world, 11 + 1000 * static_cast<std::uint64_t>(world.rank()), Device::sim());
  ZeroRun ref(config_json(0, 2, 2 * n), nullptr, 11);
  ASSERT_EQ(run.engine->plan().zero_stage, 3);
  EXPECT_EQ(gemini_of(run).layout().size(), 8u);
  for (int s = 0; s < 10; ++s) {
    const float a = run.engine->train_batch(*run.sampler), b = ref.engine->train_batch(*ref.sampler);
    EXPECT_LT(std::abs(a - b) / std::abs(b), 2e-5) << "step " << s << ": " << n << " ranks " << a << " vs 1 rank " << b;
  }
  EXPECT_LT(zero_test::rel_norm(gathered_params(run), ref.params()), 2e-5);
}

TEST(L12_Gemini, EveryStaticPlacementTrainsAsZero3) {
  auto& world = dist::world();
  std::vector<float> zero3_losses, zero3_params;
  {
    ZeroRun zero3(config_json(3, 2, 2, false, 2500, R"(, "stage3_param_persistence_threshold": 0)"), &world, 11,
                  Device::sim());
    zero3_losses = zero3.train(4);
    zero3_params = zero_test::all_params(zero3);
  }
  for (const std::string& extra : {std::string(""), std::string(R"(, "shard_param_frac": 0.5)"),
                                  std::string(R"(, "offload_optim_frac": 1.0)"),
                                  std::string(R"(, "offload_optim_frac": 1.0, "offload_param_frac": 0.5)"),
                                  std::string(R"(, "offload_optim_frac": 1.0, "offload_param_frac": 1.0)"),
                                  std::string(R"(, "max_prefetch": 2)")}) {
    SCOPED_TRACE("gemini" + extra);
    ZeroRun run(gemini_json(2, 2, extra), &world, 11, Device::sim());
    const gemini::Gemini& g = gemini_of(run);
    const gemini::GeminiLayout& layout = g.layout();
    const std::vector<float> losses = run.train(4);
    // The host AdamW computes what the device's does: within 1e-6 relative (zero/offload_optimizer.h).
    for (std::size_t s = 0; s < losses.size(); ++s)
      EXPECT_LE(std::abs(losses[s] - zero3_losses[s]), 1e-6 * std::abs(zero3_losses[s])) << "step " << s;
    EXPECT_LT(zero_test::rel_norm(gathered_params(run), zero3_params), 1e-6);
    // Each chunk where the placement put it, at its fixed size; between steps only kept-gathered chunks are whole.
    std::int64_t device_param_bytes = 0;
    for (std::size_t c = 0; c < layout.size(); ++c) {
      const zero::ShardedBucket& b = g.partition().buckets()[c];
      EXPECT_EQ(b.numel, layout.allocated[c]) << "chunk " << c;
      EXPECT_EQ(g.gathered(c), layout.keep_gathered[c]) << "chunk " << c;
      EXPECT_EQ(b.home, layout.param_on_host[c] ? zero::ShardHome::host : zero::ShardHome::device) << "chunk " << c;
      if (layout.keep_gathered[c]) device_param_bytes += 4 * b.numel;
      else if (!layout.param_on_host[c]) device_param_bytes += 4 * b.numel / world.size();
    }
    EXPECT_EQ(g.model_state_bytes().param, device_param_bytes) << "f32 parameters on the device, to the byte";
    EXPECT_EQ(layout.optim_on_host, g.sharded_optimizer().offloaded());
    if (extra.find("shard_param_frac") != std::string::npos) {
      EXPECT_GT(layout.sharded(), 0u);
      EXPECT_LT(layout.sharded(), layout.size());
    }
    if (extra.find("max_prefetch") != std::string::npos) {
      EXPECT_TRUE(g.auto_stats().warmed_up);
      EXPECT_GT(g.auto_stats().prefetches, 0) << "the schedule's next chunks gathered ahead";
    } else {
      EXPECT_EQ(g.auto_stats().prefetches, 0);
    }
    if (extra.find("offload_param_frac\": 1.0") != std::string::npos) {
      EXPECT_EQ(layout.on_host(), layout.size());
    }
    if (extra.find("offload_param_frac\": 0.5") != std::string::npos) {
      EXPECT_GT(layout.on_host(), 0u);
      EXPECT_LT(layout.on_host(), layout.size());
    }
  }
}

TEST(L12_Gemini, TensorStatesFollowTheModuleHooks) {
  auto& world = dist::world();
  ZeroRun run(gemini_json(2, 1), &world, 11, Device::sim());
  gemini::Gemini& g = gemini_of(run);
  const gemini::GeminiLayout& layout = g.layout();
  nn::GPT& model = run.engine->model();
  const nn::NamedTensors params = model.named_parameters();
  // Where each parameter is: (chunk, slot).
  std::vector<std::pair<std::size_t, std::size_t>> where(params.size());
  for (std::size_t c = 0; c < layout.size(); ++c)
    for (std::size_t s = 0; s < layout.chunks.chunks[c].slots.size(); ++s) where[layout.chunks.chunks[c].slots[s].param] = {c, s};
  auto state = [&](std::size_t p) { return g.states(where[p].first).state(where[p].second); };
  auto in_block = [&](std::size_t p, int k) { return params[p].first.starts_with("transformer.h." + std::to_string(k) + "."); };
  int forward_checks = 0, backward_checks = 0;
  // Registered after Gemini's hooks, these run after them: block 1 is about to compute.
  HookHandle fwd = model.blocks[1]->register_pre_forward_hook([&](nn::Module&, std::span<const Tensor>) {
    for (std::size_t p = 0; p < params.size(); ++p) {
      if (in_block(p, 1)) {
        EXPECT_EQ(state(p), TensorState::compute) << params[p].first;
        EXPECT_TRUE(g.gathered(where[p].first)) << params[p].first;
      }
      if (in_block(p, 0)) {
        EXPECT_EQ(state(p), TensorState::hold) << params[p].first << ": block 0's forward is done";
      }
    }
    ++forward_checks;
  });
  HookHandle bwd = model.blocks[0]->register_pre_backward_hook([&](nn::Module&, const Tensor&) {
    for (std::size_t p = 0; p < params.size(); ++p) {
      if (in_block(p, 0)) {
        EXPECT_EQ(state(p), TensorState::compute) << params[p].first;
      }
      // Block 1's gradients are final: reduced with their chunk (HOLD), or waiting for block 0's in a shared chunk.
      if (in_block(p, 1)) {
        const TensorState s = state(p);
        EXPECT_TRUE(s == TensorState::hold || s == TensorState::ready_for_reduce) << params[p].first << ": " << gemini::state_name(s);
        if (s == TensorState::hold) {
          EXPECT_FALSE(g.gathered(where[p].first)) << params[p].first << ": its chunk reduced and released";
        }
      }
    }
    ++backward_checks;
  });
  const std::int64_t gathers_before = g.gathers();
  run.train(2);
  EXPECT_EQ(forward_checks, 2);
  EXPECT_EQ(backward_checks, 2);
  // Each sharded chunk is gathered at least twice per step (forward, backward).
  EXPECT_GE(g.gathers() - gathers_before, static_cast<std::int64_t>(2 * 2 * layout.sharded()));
  // Between steps: every tensor HOLD, every sharded chunk released.
  for (std::size_t c = 0; c < layout.size(); ++c) {
    EXPECT_EQ(g.states(c).count(TensorState::hold), g.states(c).size()) << "chunk " << c;
    EXPECT_FALSE(g.gathered(c)) << "chunk " << c;
  }
}

TEST(L12_Gemini, TheRunReportShowsTheChunks) {
  auto& world = dist::world();
  ZeroRun run(gemini_json(2, 1, R"(, "offload_optim_frac": 1.0, "offload_param_frac": 0.5)"), &world, 11, Device::sim());
  run.train(1);
  const gemini::Gemini& g = gemini_of(run);
  const runtime::RunReport report(*run.engine, &world);
  const auto r = report.rank_json().at("gemini");
  EXPECT_EQ(r.at("chunk_size"), 2400);
  EXPECT_EQ(r.at("chunk_size_from"), "chunk_config_dict");
  EXPECT_EQ(r.at("chunks"), g.layout().size());
  EXPECT_EQ(r.at("waste_elements"), 2400 * static_cast<std::int64_t>(g.layout().size()) - run.psi());
  EXPECT_EQ(r.at("kept_gathered"), 0);
  EXPECT_EQ(r.at("shards_on_host"), g.layout().on_host());
  EXPECT_GT(r.at("shards_on_host").get<int>(), 0);
  EXPECT_EQ(r.at("optimizer_on_host"), true);
  EXPECT_EQ(r.at("gathers"), g.gathers());
}

namespace {

/// One train_batch's h2d bytes (the model's traffic, io apart) and the auto counters' growth.
struct AutoStep {
  std::int64_t h2d = 0, loads = 0, evictions = 0, refreshes = 0, uncached = 0;
  float loss = 0;
};
AutoStep one_auto_step(ZeroRun& run) {
  const gemini::Gemini& g = gemini_of(run);
  const gemini::Gemini::AutoStats before = g.auto_stats();
  const std::int64_t h2d = transfer_stats().h2d;
  events::Recorder recorder;
  float loss = 0;
  {
    events::Attach on(recorder);
    loss = run.engine->train_batch(*run.sampler);
  }
  const gemini::Gemini::AutoStats& after = g.auto_stats();
  // Each load and eviction is a trace event naming the chunk; an OPT eviction says its next use.
  std::int64_t loads = 0, evictions = 0;
  for (const events::Event& e : recorder.events()) {
    if (e.name == "gemini_load") ++loads;
    if (e.name == "gemini_evict") {
      ++evictions;
      EXPECT_TRUE(e.scope.starts_with("chunk ")) << e.scope;
      if (after.warmed_up && before.warmed_up) {
        EXPECT_NE(e.scope.find("(OPT)"), std::string::npos) << e.scope;
      }
    }
  }
  EXPECT_EQ(loads, after.loads - before.loads);
  EXPECT_EQ(evictions, after.evictions - before.evictions);
  // The step's frames (docs/frames.md version 4) carry every chunk and, on the frame after them, the same moves in
  // the same order; the last frame's chunks are where the shards are now.
  const std::vector<nlohmann::json> frames = trace::frames_of(recorder.events());
  std::vector<std::string> moved, emitted;
  for (const events::Event& e : recorder.events())
    if (e.name == "gemini_load" || e.name == "gemini_evict") emitted.push_back(e.name.substr(7) + " " + e.scope);
  for (const nlohmann::json& f : frames) {
    EXPECT_EQ(f.at("chunks").size(), g.layout().size());
    if (f.contains("chunk_moves"))
      for (const nlohmann::json& m : f["chunk_moves"])
        moved.push_back(m.at("move").get<std::string>() + " chunk " + std::to_string(m.at("chunk").get<int>()) + ": " +
                        m.at("why").get<std::string>());
  }
  EXPECT_EQ(moved, emitted);
  if (!frames.empty()) {
    const nlohmann::json& last = frames.back().at("chunks");
    for (std::size_t c = 0; c < g.layout().size(); ++c) {
      EXPECT_EQ(last[c].at("shard"), g.resident(c) ? "cached" : "host") << "chunk " << c;
      EXPECT_EQ(last[c].at("unit"), g.gathered(c) ? "gathered" : "sharded") << "chunk " << c;
    }
  }
  return {transfer_stats().h2d - h2d, after.loads - before.loads, after.evictions - before.evictions,
          after.refreshes - before.refreshes, after.uncached_gathers - before.uncached_gathers, loss};
}

}  // namespace

TEST(L12_GeminiAuto, TrainsAsZero3AndEveryCopyUpIsALoadARefreshOrAnUncachedGather) {
  auto& world = dist::world();
  std::vector<float> zero3_losses;
  {
    ZeroRun zero3(config_json(3, 2, 2, false, 2500, R"(, "stage3_param_persistence_threshold": 0)"), &world, 11,
                  Device::sim());
    zero3_losses = zero3.train(6);
  }
  // The test GPT's 8 chunks of 2400 f32 elements: a shard is 9600 / N bytes. Unlimited, then capacities that leave
  // room for a few shards, then for none (every gather copies its shard up from the host).
  const std::int64_t shard = 2400 * 4 / world.size();
  std::int64_t evictions_seen = 0, unlimited_peak = 0;
  // Shares of the peak with every shard cached (measured first, unlimited); the last with a prefetch ahead.
  for (const auto& [share, prefetch] : {std::pair{0.0, 0}, std::pair{1.1, 0}, std::pair{1.0, 0}, std::pair{1.2, 1}}) {
    const auto capacity = static_cast<std::int64_t>(share * static_cast<double>(unlimited_peak));
    SCOPED_TRACE("capacity " + std::to_string(capacity) + ", max_prefetch " + std::to_string(prefetch));
    set_memory_capacity(Device::sim(), capacity);
    ZeroRun run(gemini_json(2, 2, R"(, "placement_policy": "auto", "max_prefetch": )" + std::to_string(prefetch)), &world,
                11, Device::sim());
    const gemini::Gemini& g = gemini_of(run);
    reset_peak_memory(Device::sim());
    std::vector<float> losses;
    for (int s = 0; s < 6; ++s) {
      const AutoStep step = one_auto_step(run);
      losses.push_back(step.loss);
      // Every byte that went up is one shard: loaded into the cache, refreshed after the step, or copied into a
      // gather's slot. Nothing else crosses (the optimizer runs on the host and writes the host shards).
      EXPECT_EQ(step.h2d, shard * (step.loads + step.refreshes + step.uncached)) << "step " << s;
      if (capacity == 0 && s > 0) {  // everything cached after the first use: only the refresh of all 8 shards
        EXPECT_EQ(step.refreshes, 8);
        EXPECT_EQ(step.loads + step.uncached + step.evictions, 0);
      }
      if (s > 0) evictions_seen += step.evictions;
    }
    EXPECT_EQ(g.auto_stats().prefetches > 0, prefetch > 0);
    EXPECT_TRUE(g.auto_stats().warmed_up);
    // The schedule: each moment (the model's own hooks, then each block's) uses the chunks of its tensors, once in
    // forward and once in backward.
    std::size_t expected_uses = 0;
    const nn::NamedTensors params = run.engine->model().named_parameters();
    for (int part = -1; part < 2; ++part) {  // -1: the outer tensors; 0, 1: the blocks
      std::set<std::size_t> chunks;
      for (std::size_t c = 0; c < g.layout().size(); ++c)
        for (const gemini::ChunkSlot& slot : g.layout().chunks.chunks[c].slots) {
          const std::string& name = params[slot.param].first;
          const bool in_part = part < 0 ? !name.starts_with("transformer.h.")
                                        : name.starts_with("transformer.h." + std::to_string(part) + ".");
          if (in_part) chunks.insert(c);
        }
      expected_uses += 2 * chunks.size();
    }
    EXPECT_EQ(g.auto_stats().schedule_uses, expected_uses);
    for (std::size_t s = 0; s < losses.size(); ++s)
      EXPECT_LE(std::abs(losses[s] - zero3_losses[s]), 1e-6 * std::abs(zero3_losses[s])) << "step " << s;
    if (capacity > 0) {
      EXPECT_LE(memory_stats(Device::sim()).peak_total, capacity) << "the device never over its capacity";
    } else {
      unlimited_peak = memory_stats(Device::sim()).peak_total;
    }
  }
  set_memory_capacity(Device::sim(), 0);
  EXPECT_GT(evictions_seen, 0) << "after the warm-up, a capacity that holds a few shards evicts";
}

// A Gemini save resumes: on the ranks that saved it the run goes on bit for bit (static placement with the shards and
// the optimizer on the host, and auto: where a shard lives changes no value), and a plain ZeRO-3 run resumes it too and
// goes on with the same losses (Gemini trains as ZeRO-3: the save holds parameters and AdamW's state by name).
TEST(L12_Gemini, ResumesBitIdenticalOnTheSameRanksAndAsZero3) {
  auto& world = dist::world();
  zero_test::SharedDir dir;
  const std::string zero3 = config_json(3, 2, 1, false, 2500, R"(, "stage3_param_persistence_threshold": 0)");
  int k = 0;
  for (const std::string& placement :
       {std::string(R"(, "offload_optim_frac": 1.0, "offload_param_frac": 0.5)"), std::string(R"(, "placement_policy": "auto")")}) {
    SCOPED_TRACE(placement);
    const std::string path = dir.path("gemini" + std::to_string(k++));
    ZeroRun run(gemini_json(2, 1, placement), &world, 11, Device::sim());
    run.train(2);
    runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");  // sharded: every rank writes its own
    world.barrier();
    const std::vector<float> uninterrupted = run.train(2);

    ZeroRun resumed(gemini_json(2, 1, placement), &world, 99, Device::sim());  // another init: all from the save
    EXPECT_TRUE(runtime::resume_from(path, *resumed.engine).warnings.empty());
    EXPECT_EQ(resumed.train(2), uninterrupted) << "losses must be equal to the bit";

    ZeroRun as_zero3(zero3, &world, 99, Device::sim());
    runtime::resume_from(path, *as_zero3.engine);
    const std::vector<float> losses = as_zero3.train(2);
    for (std::size_t s = 0; s < losses.size(); ++s)
      EXPECT_LE(std::abs(losses[s] - uninterrupted[s]), 1e-6 * std::abs(uninterrupted[s])) << "step " << s + 3;
  }
}
