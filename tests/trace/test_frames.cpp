// Recording frames (trace/frames.h): held ranges painted over each other, with the elements a second
// buffer covers twice; frames taken out of a rank's events with their step and micro-step, and only
// inside a step; the ranks' frames paired into frames.json, or one error naming the rank that differs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "trace/frames.h"
#include "trace/frames_reader.h"
#include "trace/terminal_player.h"

using namespace minitorch;
using nlohmann::json;
using testing::HasSubstr;
using testing::Not;

TEST(L07_Frames, PaintingSplitsWhatItCoversAndMergesNeighboursOfOneState) {
  trace::HeldRanges h;
  h.paint(0, 100, "shard");
  h.paint(200, 300, "shard");
  h.paint(50, 250, "gathered", trace::Overlay::separate_buffer);  // over both: 50 + 50 elements held twice
  EXPECT_EQ(h.to_json(), json::parse(R"([{"begin": 0, "end": 50, "state": "shard"},
                                         {"begin": 50, "end": 250, "state": "gathered"},
                                         {"begin": 250, "end": 300, "state": "shard"}])"));
  EXPECT_EQ(h.held(), 300);
  EXPECT_EQ(h.shadowed(), 100);
  h.paint(250, 300, "gathered");  // the same buffer, another state: nothing counted twice
  EXPECT_EQ(h.shadowed(), 100);
  EXPECT_EQ(h.to_json().back(), json::parse(R"({"begin": 50, "end": 300, "state": "gathered"})"));
  h.paint(400, 410, "whole");
  h.paint(300, 400, "whole");  // fills the gap: one range
  EXPECT_EQ(h.to_json().size(), 3u);
  EXPECT_EQ(h.held(), 410);
}

namespace {
events::Event phase(const char* name, std::int64_t step) {
  events::Event e;
  e.category = events::Category::phase;
  e.name = name;
  e.step = step;
  return e;
}
events::Event frame(const std::string& label) {
  events::Event e = phase("frame", -1);
  e.detail = json{{"label", label}, {"phase", "forward"}}.dump();
  return e;
}
events::Event backward(std::int64_t micro) {
  events::Event e;
  e.category = events::Category::compute;
  e.kind = events::Kind::begin;
  e.name = "backward";
  e.micro_step = micro;
  return e;
}
}  // namespace

TEST(L07_Frames, FramesOfAStepCarryItsNumberAndMicroStepAndNothingBetweenSteps) {
  const std::vector<events::Event> evs = {frame("before"),      phase("step_begin", 0), frame("a"), backward(1),
                                          frame("b"),           phase("step_end", 1),   frame("evaluation"),
                                          phase("step_begin", 1), frame("c")};
  const std::vector<json> got = trace::frames_of(evs);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0]["label"], "a");
  EXPECT_EQ(got[0]["step"], 1);
  EXPECT_EQ(got[0]["micro"], 0);
  EXPECT_EQ(got[1]["micro"], 1);
  EXPECT_EQ(got[2]["label"], "c");
  EXPECT_EQ(got[2]["step"], 2);
  EXPECT_EQ(got[2]["micro"], 0);
}

namespace {
json rank_frame(const std::string& label, std::int64_t begin, std::int64_t end) {
  trace::RankHoldings h;
  h.params.paint(begin, end, "shard");
  return {{"label", label}, {"phase", "forward"}, {"caption", label}, {"collective", nullptr}, {"step", 1},
          {"micro", 0}, {"params", h.params.to_json()}, {"grads", json::array()}, {"optim", json::array()},
          {"shadowed", {{"params", 0}, {"grads", 0}, {"optim", 0}}}, {"memory_bytes", {{"param", 4 * (end - begin)}}}};
}
}  // namespace

TEST(L07_Frames, TheRanksFramesPairUpIntoAFileThePlayersRead) {
  trace::FlatSpace space;
  trace::SpaceBucket& b = space.add_bucket("bucket 0", 8);
  b.params.push_back({"w", 0, 7});  // one element of padding
  const json run = {{"strategy", "ZeRO-3"}, {"zero_stage", 3}, {"world_size", 2}, {"dtype", "f32"}, {"num_parameters", 7}};
  const json doc = trace::frames_document(run, space, {{rank_frame("x", 0, 4)}, {rank_frame("x", 4, 8)}});
  EXPECT_EQ(doc["version"], trace::kFramesVersion);  // the schema this build writes (docs/frames.md)
  EXPECT_FALSE(doc["space"]["buckets"][0].contains("persistent"));  // only ZeRO-3's persistent buckets say it
  const trace::FramesDoc read = trace::parse_frames(doc, "test");
  EXPECT_EQ(read.version, trace::kFramesVersion);
  ASSERT_EQ(read.frames.size(), 1u);
  EXPECT_EQ(read.frames[0].ranks[1].params[0].begin, 4);
  EXPECT_EQ(read.owner_of(5), 1);
  EXPECT_EQ(read.numel, 8);
  try {
    trace::frames_document(run, space, {{rank_frame("x", 0, 4)}, {rank_frame("y", 4, 8)}});
    FAIL() << "frames that differ must not pair";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'y' on rank 1"));
  }
  EXPECT_THROW(trace::frames_document(run, space, {{rank_frame("x", 0, 4)}, {}}), std::runtime_error);
}

// The optimizer step's gradient-norm all-reduce moves one number per rank, no range of the flat buffers: the
// terminal player names it instead of printing an empty range "[0, 0)" (the page does the same: browser_check.py).
TEST(L07_Frames, TheNormsAllReduceIsNamedNotAnEmptyRange) {
  trace::FlatSpace space;
  space.add_bucket("bucket 0", 8).params.push_back({"w", 0, 8});
  const json run = {{"strategy", "ZeRO-2"}, {"zero_stage", 2}, {"world_size", 2}, {"dtype", "f32"}, {"num_parameters", 8}};
  json norm = rank_frame("optimizer step of the shards", 0, 4), reduce = rank_frame("reduce", 0, 4);
  norm["phase"] = "optimizer_step";
  norm["collective"] = trace::collective_json("all_reduce", -1, 0, 0, 1, 4, 2);
  reduce["collective"] = trace::collective_json("reduce_scatter", 0, 0, 8, 4, 16, 2);
  json other_norm = norm, other_reduce = reduce;
  const trace::FramesDoc doc =
      trace::parse_frames(trace::frames_document(run, space, {{reduce, norm}, {other_reduce, other_norm}}), "test");
  const std::string shown = trace::render_frame_text(doc, 1, {});
  EXPECT_THAT(shown, HasSubstr("all_reduce of the gradient norm (one number, not a range of the buffers): 1 elements"));
  EXPECT_THAT(shown, Not(HasSubstr("[0, 0)")));
  EXPECT_THAT(trace::render_frame_text(doc, 0, {}), HasSubstr("reduce_scatter bucket 0 (bucket 0) [0, 8): 4 elements"));
}

// Gemini's chunks (version 4): a frame carries every chunk's state, and the chunk moves since the rank's frame before
// it; the file keeps them per rank, the reader checks them, the terminal shows a chunks row and a line per move.
TEST(L12_Frames, GeminiChunksAndTheirMovesTravelFromTheEventsToThePlayers) {
  events::Event load = phase("gemini_load", -1), evict = phase("gemini_evict", -1);
  load.detail = json{{"chunk", 1}, {"move", "load"}, {"why", "cached on the device"}}.dump();
  evict.detail = json{{"chunk", 0}, {"move", "evict"}, {"why", "next use at 9, the farthest (OPT); at use 4"}}.dump();
  const std::vector<events::Event> evs = {load, phase("step_begin", 0), evict, load, frame("a"), frame("b")};
  const std::vector<json> got = trace::frames_of(evs);
  ASSERT_EQ(got.size(), 2u);  // the load before the step is not shown: frames are made inside a step only
  ASSERT_EQ(got[0]["chunk_moves"].size(), 2u);
  EXPECT_EQ(got[0]["chunk_moves"][0]["move"], "evict");
  EXPECT_EQ(got[0]["chunk_moves"][1]["chunk"], 1);
  EXPECT_FALSE(got[1].contains("chunk_moves"));  // the moves go with the first frame after them only

  trace::FlatSpace space;
  space.add_bucket("chunk 0", 4).params.push_back({"w", 0, 4});
  space.add_bucket("chunk 1", 4).params.push_back({"v", 4, 8});
  const json run = {{"strategy", "Gemini"}, {"zero_stage", 3}, {"world_size", 2}, {"dtype", "f32"}, {"num_parameters", 8}};
  auto gemini_frame = [&](std::int64_t begin) {
    json f = rank_frame("all-gather chunk 1", begin, begin + 2);
    f["chunks"] = json::parse(R"([{"unit": "sharded", "shard": "host", "tensors": {"HOLD": 1}},
                                  {"unit": "gathered", "shard": "cached", "tensors": {"COMPUTE": 1}}])");
    f["chunk_moves"] = got[0]["chunk_moves"];
    return f;
  };
  json doc = trace::frames_document(run, space, {{gemini_frame(0)}, {gemini_frame(2)}});
  const trace::FramesDoc read = trace::parse_frames(doc, "test");
  ASSERT_EQ(read.frames[0].ranks[1].chunks.size(), 2u);
  EXPECT_EQ(read.frames[0].ranks[1].chunks[1].shard, "cached");
  EXPECT_EQ(read.frames[0].ranks[1].chunks[1].tensors[0], (std::pair<std::string, std::int64_t>{"COMPUTE", 1}));
  EXPECT_EQ(read.frames[0].ranks[0].chunk_moves[0].why, "next use at 9, the farthest (OPT); at use 4");
  const std::string shown = trace::render_frame_text(read, 0, {});
  EXPECT_THAT(shown, HasSubstr("       chunks   |.hH |GcC |"));
  EXPECT_THAT(shown, HasSubstr("       evict    chunk 0: next use at 9, the farthest (OPT); at use 4"));
  EXPECT_THAT(trace::render_run_header(read, {}), HasSubstr("chunks (Gemini, a bucket each)"));

  // Bad chunk fields: one error naming the place.
  auto error_of = [&](const std::function<void(json&)>& spoil) {
    json bad = doc;
    spoil(bad["frames"][0]["ranks"][1]);
    try {
      trace::parse_frames(bad, "f.json");
    } catch (const trace::FramesError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error_of([](json& r) { r["chunks"].erase(1); }),
              HasSubstr("frames[0].ranks[1].chunks: expected one entry per bucket (2), got 1"));
  EXPECT_THAT(error_of([](json& r) { r["chunks"][0]["shard"] = "nvme"; }),
              HasSubstr("chunks[0].shard: must be one of device, cached, host; got \"nvme\""));
  EXPECT_THAT(error_of([](json& r) { r["chunks"][1]["unit"] = "lost"; }), HasSubstr("chunks[1].unit: must be one of"));
  EXPECT_THAT(error_of([](json& r) { r["chunks"][0]["tensors"] = {{"HELD", 1}}; }),
              HasSubstr("chunks[0].tensors.HELD: must be one of FREE, COMPUTE, HOLD, HOLD_AFTER_BWD, READY_FOR_REDUCE"));
  EXPECT_THAT(error_of([](json& r) { r["chunks"][0]["tensors"]["HOLD"] = 0; }), HasSubstr("tensors.HOLD: must be in [1,"));
  EXPECT_THAT(error_of([](json& r) { r["chunk_moves"][0]["chunk"] = 2; }), HasSubstr("chunk_moves[0].chunk: must be in [0, 1]"));
  EXPECT_THAT(error_of([](json& r) { r["chunk_moves"][1]["move"] = "swap"; }),
              HasSubstr("chunk_moves[1].move: must be one of load, evict; got \"swap\""));
}
