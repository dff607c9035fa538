// frames.json from real runs (trace/frames.h, docs/frames.md): every stage on N ranks records frames
// whose ranges agree with the allocator to the byte, whose collectives add up to what the comm events
// of each step moved and to the strategy's formula with its extras, which pair up across the ranks into
// a file the players accept, and whose owners are the shards of the partition; ZeRO-3's backward
// releases are frames of their own, in order, with the unit's reduce-scatter in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "trace/chrome_trace.h"
#include "trace/frames.h"
#include "trace/frames_reader.h"
#include "runtime/step_trace.h"
#include "zero_test_util.h"

using namespace minitorch;
using nlohmann::json;

namespace {

struct Recorded {
  std::vector<events::Event> events;
  std::vector<json> frames;  ///< this rank's
  json doc;                  ///< frames.json (rank 0; null elsewhere)
};

/// Trains `steps` steps of `config` on every rank with a trace recorder attached.
Recorded record(const std::string& config, int steps) {
  auto& world = dist::world();
  zero_test::ZeroRun run(config, &world);
  trace::TraceRecorder recorder;
  {
    events::Attach on(recorder);
    run.train(steps);
  }
  Recorded r;
  r.events = recorder.events();
  r.frames = trace::frames_of(r.events);
  r.doc = runtime::gather_frames(r.events, &world, *run.engine);
  // (rank 0's frames_document throws if the ranks' frames do not pair up one to one)
  return r;
}

std::int64_t held(const json& ranges) {
  std::int64_t n = 0;
  for (const json& r : ranges) n += r["end"].get<std::int64_t>() - r["begin"].get<std::int64_t>();
  return n;
}

/// Every frame's ranges × element size = the allocator's bytes of the tag at that moment (ranges a
/// second buffer covers twice counted twice: `shadowed`).
void expect_bytes_match_allocator(const Recorded& r, int param_bytes, int optim_bytes) {
  for (const json& f : r.frames)
    for (const auto& [kind, tag, size] : {std::tuple{"params", "param", param_bytes}, std::tuple{"grads", "grad", param_bytes},
                                          std::tuple{"optim", "optim", optim_bytes}})
      EXPECT_EQ(size * (held(f[kind]) + f["shadowed"][kind].get<std::int64_t>()), f["memory_bytes"][tag].get<std::int64_t>())
          << kind << " at frame '" << f["label"].get<std::string>() << "' of step " << f["step"] << ", rank "
          << dist::world().rank();
}

/// Per step, the elements of each op the frames name = what the comm events of that step sent.
void expect_collectives_match_comm_events(const Recorded& r) {
  std::map<std::int64_t, std::map<std::string, std::int64_t>> events_per_step, frames_per_step;
  std::int64_t step = 0;
  bool in_step = false;
  for (const events::Event& e : r.events) {
    if (e.category == events::Category::phase && e.name == "step_begin") step = e.step + 1, in_step = true;
    if (e.category == events::Category::phase && e.name == "step_end") in_step = false;
    if (in_step && e.category == events::Category::comm && e.kind != events::Kind::end && e.elements > 0)
      events_per_step[step][e.name] += e.elements;
  }
  for (const json& f : r.frames)
    if (!f["collective"].is_null())
      frames_per_step[f["step"].get<std::int64_t>()][f["collective"]["op"].get<std::string>()] +=
          f["collective"]["elements"].get<std::int64_t>();
  EXPECT_EQ(frames_per_step, events_per_step) << "rank " << dist::world().rank();
}

/// Rank 0's frames.json, read as the players read it (an empty document on the other ranks: their
/// checks of it pass vacuously, rank 0's count).
trace::FramesDoc assemble(const Recorded& r) {
  if (dist::world().rank() != 0) return {};
  return trace::parse_frames(r.doc, "test");
}

/// Per step, what the frames' collectives sent (rank 0's bytes, as the players add them up) = the
/// strategy's ring passes over the flat space (padding included) − ZeRO-3's persistent buckets' missing
/// passes + the norm's one-element f32 all-reduce (docs/frames.md, "What a step sends"), exactly: times N,
/// in integers. `accumulation`: the run's G.
void expect_step_traffic(const trace::FramesDoc& doc, std::int64_t accumulation) {
  if (doc.frames.empty()) return;  // not rank 0
  EXPECT_EQ(doc.accumulation, accumulation);
  const std::int64_t N = doc.world_size, G = accumulation;
  const std::int64_t B = doc.zero_stage == 0 ? 4 : doc.dtype == "f32" ? 4 : 2;  // DDP reduces in f32 buffers
  const std::int64_t passes = doc.zero_stage <= 1 ? 2 : doc.zero_stage == 2 ? G + 1 : 3 * G;
  std::int64_t persistent = 0;
  for (const trace::Bucket& b : doc.buckets) persistent += b.persistent ? b.numel() : 0;
  const std::int64_t norm = doc.zero_stage == 0 ? 0 : 4 * dist::all_reduce_volume(1, static_cast<int>(N), 0);
  std::map<std::int64_t, std::int64_t> sent;  // per step
  std::map<std::int64_t, std::size_t> last;   // per step: its last frame
  for (std::size_t i = 0; i < doc.frames.size(); ++i) {
    const trace::Frame& f = doc.frames[i];
    sent[f.step] += f.collective ? f.collective->bytes : 0;
    last[f.step] = i;
  }
  for (const auto& [step, bytes] : sent) {
    EXPECT_EQ(bytes * N, passes * (N - 1) * doc.numel * B - (2 * G - 1) * (N - 1) * persistent * B + norm * N)
        << doc.strategy << " step " << step << ": " << bytes << " B; numel " << doc.numel << ", Ψ " << doc.num_parameters
        << ", persistent " << persistent;
    EXPECT_EQ(doc.step_bytes_through(last[step]), bytes) << "the players' running total at the step's last frame";
  }
}

/// Every range of `ranges` lies in rank `rank`'s shard of its bucket.
void expect_owned_by(const trace::FramesDoc& doc, const std::vector<trace::Range>& ranges, int rank, const std::string& what) {
  for (const trace::Range& x : ranges) {
    EXPECT_EQ(doc.owner_of(x.begin), rank) << what << " [" << x.begin << ", " << x.end << ")";
    EXPECT_EQ(doc.owner_of(x.end - 1), rank) << what << " [" << x.begin << ", " << x.end << ")";
  }
}

/// Gradients "reducing" (a reduce-scatter in flight) are only ever a rank's own shard, and some frame
/// shows one (rank 0; vacuous elsewhere).
void expect_reductions_in_flight_on_own_shards(const trace::FramesDoc& doc) {
  if (doc.frames.empty()) return;
  int in_flight = 0;
  for (const trace::Frame& f : doc.frames)
    for (const trace::RankState& s : f.ranks)
      for (const trace::Range& g : s.grads)
        if (g.state == "reducing") {
          ++in_flight;
          expect_owned_by(doc, {g}, s.rank, "reducing gradients at '" + f.label + "'");
        }
  EXPECT_GT(in_flight, 0) << doc.strategy << ": no frame shows a reduce-scatter in flight";
}

}  // namespace

TEST(L07_StepFrames, DdpFramesMatchTheAllocatorAndTheAllReduce) {
  const Recorded r = record(zero_test::config_json(0, 2, 2), 2);
  ASSERT_EQ(r.frames.size(), 1u + 2 * (2 + 2 + 1 + 1));  // init; per step 2 × (forward, backward), reduce, step
  expect_bytes_match_allocator(r, 4, 8);
  expect_collectives_match_comm_events(r);
  const trace::FramesDoc doc = assemble(r);
  if (dist::world().rank() == 0) {
    EXPECT_EQ(doc.strategy, "DDP");
  }
  expect_step_traffic(doc, 2);
  for (const trace::Frame& f : doc.frames)
    for (const trace::RankState& s : f.ranks) {
      std::int64_t whole = 0;  // every parameter whole, the buckets' padding not held
      for (const trace::Range& p : s.params) whole += p.state == "whole" ? p.end - p.begin : 0;
      EXPECT_EQ(whole, doc.num_parameters);
      if (f.phase == "reduce") {
        EXPECT_EQ(s.grads.front().state, "reduced");
      }
    }
}

TEST(L07_StepFrames, Zero1OptimizerStatesAreEachRanksShard) {
  const Recorded r = record(zero_test::config_json(1, 2, 2), 2);
  expect_bytes_match_allocator(r, 4, 8);
  expect_collectives_match_comm_events(r);
  const trace::FramesDoc doc = assemble(r);
  expect_step_traffic(doc, 2);
  expect_reductions_in_flight_on_own_shards(doc);
  if (doc.frames.empty()) return;  // not rank 0
  const trace::Frame& last = doc.frames.back();
  EXPECT_EQ(last.phase, "gather");
  for (const trace::RankState& s : last.ranks) {
    EXPECT_FALSE(s.optim.empty());
    expect_owned_by(doc, s.optim, s.rank, "optimizer states");
    for (const trace::Range& g : s.grads)
      if (g.state == "reduced") expect_owned_by(doc, {g}, s.rank, "reduced gradients");
  }
}

TEST(L07_StepFrames, Zero2LocalGradientsOverTheShardCountTwiceUntilReduced) {
  const Recorded r = record(zero_test::config_json(2, 2, 2), 2);
  expect_bytes_match_allocator(r, 4, 8);
  expect_collectives_match_comm_events(r);
  bool shadowed = false;
  for (const json& f : r.frames) shadowed = shadowed || f["shadowed"]["grads"].get<std::int64_t>() > 0;
  EXPECT_TRUE(shadowed) << "some frame must hold local gradients over the gradient shard";
  const trace::FramesDoc doc = assemble(r);
  expect_step_traffic(doc, 2);
  expect_reductions_in_flight_on_own_shards(doc);
  for (const trace::Frame& f : doc.frames)
    if (f.phase == "optimizer_step")
      for (const trace::RankState& s : f.ranks) {
        expect_owned_by(doc, s.grads, s.rank, "gradients at the step");  // only the shards remain
        for (const trace::Range& g : s.grads) EXPECT_EQ(g.state, "reduced");
      }
}

TEST(L07_StepFrames, Zero3UnitsAreGatheredOnlyWhileTheyRun) {
  // Threshold 30: the LayerNorm vectors (24) stay whole on every rank; the rest is sharded in units.
  const Recorded r = record(zero_test::config_json(3, 2, 2, false, 2500, R"(, "stage3_param_persistence_threshold": 30)"), 2);
  expect_bytes_match_allocator(r, 4, 8);
  expect_collectives_match_comm_events(r);
  const trace::FramesDoc doc = assemble(r);
  expect_step_traffic(doc, 2);
  expect_reductions_in_flight_on_own_shards(doc);
  int gathers = 0;
  for (const trace::Frame& f : doc.frames) {
    if (f.collective && f.collective->op == "all_gather" && f.collective->bucket) {
      ++gathers;
      for (const trace::RankState& s : f.ranks) {  // the unit it gathered is held whole by every rank
        const trace::Bucket& b = doc.buckets[static_cast<std::size_t>(*f.collective->bucket)];
        bool whole = false;
        for (const trace::Range& p : s.params) whole = whole || (p.begin <= b.begin && p.end >= b.end && p.state == "gathered");
        EXPECT_TRUE(whole) << f.label << ", rank " << s.rank;
      }
    }
    if (f.phase == "optimizer_step")  // between the passes, each rank holds only its shards and the persistent tensors
      for (const trace::RankState& s : f.ranks)
        for (const trace::Range& p : s.params) {
          EXPECT_NE(p.state, "gathered") << "rank " << s.rank;
          if (p.state == "shard") expect_owned_by(doc, {p}, s.rank, "parameter shard");
        }
  }
  // Per step: every unit gathered twice (forward, backward) per micro-step, 2 micro-steps, 2 steps.
  const int units = static_cast<int>(std::count_if(doc.buckets.begin(), doc.buckets.end(),
                                                   [](const trace::Bucket& b) { return b.name.rfind("persistent", 0) != 0; }));
  if (dist::world().rank() == 0) {
    EXPECT_EQ(gathers, 2 * 2 * 2 * units);
  }
}

TEST(L07_StepFrames, Zero3Bf16KeepsTwelveBytesOfOptimizerStatePerElement) {
  const Recorded r = record(zero_test::config_json(3, 2, 1, true, 2500, R"(, "stage3_param_persistence_threshold": 0)"), 1);
  expect_bytes_match_allocator(r, 2, 12);
  expect_collectives_match_comm_events(r);
  const trace::FramesDoc doc = assemble(r);
  expect_step_traffic(doc, 1);
  if (dist::world().rank() == 0) {
    EXPECT_EQ(doc.dtype, "bf16");
  }
}

namespace {
/// Rank `rank`'s ranges of `kind` that meet bucket `b`, clipped to it.
std::vector<trace::Range> within(const std::vector<trace::Range>& ranges, const trace::Bucket& b) {
  std::vector<trace::Range> out;
  for (const trace::Range& x : ranges)
    if (x.end > b.begin && x.begin < b.end) out.push_back({std::max(x.begin, b.begin), std::min(x.end, b.end), x.state});
  return out;
}
}  // namespace

TEST(L07_StepFrames, Zero3BackwardReleasesAreFramesInOrderWithTheirReduceScatterInFlight) {
  // 2 micro-steps of 2 steps; threshold 30: the LayerNorm vectors are persistent buckets (never released). Buckets
  // bigger than any unit: each unit in one reduce-scatter, its local gradients freed as it starts (a unit bigger
  // than reduce_bucket_size keeps them until its last chunk is packed: tests/zero_mpi/test_constant_buffers.cpp).
  const Recorded r = record(zero_test::config_json(3, 2, 2, false, 100000, R"(, "stage3_param_persistence_threshold": 30)"), 2);
  expect_bytes_match_allocator(r, 4, 8);  // the release frames too: recorded outside the gradient hooks
  const trace::FramesDoc doc = assemble(r);
  if (doc.frames.empty()) return;  // not rank 0
  // The units in the order backward meets them: the outer unit (the head's backward is first), the blocks reversed.
  std::vector<std::string> blocks;
  for (const trace::Bucket& b : doc.buckets)
    if (b.name.rfind("h.", 0) == 0) blocks.push_back(b.name);
  ASSERT_EQ(blocks.size(), 2u);
  std::vector<std::string> expected = {"all-gather outer"};
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    expected.push_back("all-gather " + *it);
    expected.push_back("release " + *it);
  }
  expected.push_back("release outer");
  // Per backward (4: 2 steps × 2 micro-steps), its gathers and releases in that order.
  std::vector<std::vector<std::string>> backwards;
  bool in_backward = false;
  for (const trace::Frame& f : doc.frames) {
    const bool backward = f.phase == "backward";
    if (backward && !in_backward) backwards.emplace_back();
    in_backward = backward && f.label != "backward";  // the engine's "backward" frame ends one
    if (backward && (f.label.rfind("all-gather ", 0) == 0 || f.label.rfind("release ", 0) == 0))
      backwards.back().push_back(f.label);
  }
  ASSERT_EQ(backwards.size(), 4u);
  for (const auto& labels : backwards) EXPECT_EQ(labels, expected);

  int releases = 0;
  for (std::size_t i = 0; i < doc.frames.size(); ++i) {
    const trace::Frame& f = doc.frames[i];
    if (f.phase != "backward" || f.label.rfind("release ", 0) != 0) continue;
    ++releases;
    const std::string unit = f.label.substr(8);
    const auto bucket = std::find_if(doc.buckets.begin(), doc.buckets.end(), [&](const trace::Bucket& b) { return b.name == unit; });
    ASSERT_NE(bucket, doc.buckets.end()) << f.label;
    for (const trace::RankState& s : f.ranks) {  // the unit: the own shard only, its gradient shard reducing
      const auto [begin, end] = bucket->shard(s.rank, doc.world_size);
      EXPECT_EQ(within(s.params, *bucket), (std::vector<trace::Range>{{begin, end, "shard"}})) << f.label << ", rank " << s.rank;
      EXPECT_EQ(within(s.grads, *bucket), (std::vector<trace::Range>{{begin, end, "reducing"}})) << f.label << ", rank " << s.rank;
    }
    // its reduce-scatter finishes later (at the latest when the next backward begins): the next frame
    // naming the unit's reduction comes before its next backward release
    std::size_t j = i + 1;
    while (j < doc.frames.size() && doc.frames[j].label != "reduce-scatter " + unit &&
           !(doc.frames[j].label == f.label && doc.frames[j].phase == "backward"))
      ++j;
    ASSERT_LT(j, doc.frames.size()) << f.label << " at frame " << i << " has no reduce-scatter after it";
    EXPECT_EQ(doc.frames[j].label, "reduce-scatter " + unit) << f.label << " at frame " << i;
  }
  EXPECT_EQ(releases, 4 * 3);  // per backward: 2 blocks and the outer unit
}
