// minitorch-train --trace DIR as a user runs it: a 2-rank ZeRO-3 run writes DIR/trace.json, a valid
// Chrome trace (trace::check_chrome_trace) with one process per rank, whose collectives carry the
// bytes the run report counts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trace/chrome_trace.h"
#include "trace/frames_reader.h"

using mt_test::run_command;
using nlohmann::json;
using testing::HasSubstr;

TEST(L07_TraceCli, Zero3OnTwoRanksWritesAValidChromeTraceWithTheReportsBytes) {
  mt_test::TempDir dir;
  const std::string data = mt_test::write_corpus(dir), out = dir.path("trace"), report = dir.path("r.json");
  auto r = run_command(mt_test::mpirun_command(
      "minitorch-train", 2,
      "--config " + mt_test::tiny_model_copy(dir, "configs/zero3.json") + " --data " + data + " --steps 2 --out '' --trace " + out +
          " --report " + report));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("wrote " + out + "/trace.json"));
  const json file = json::parse(std::ifstream(out + "/trace.json"));
  EXPECT_EQ(minitorch::trace::check_chrome_trace(file), "");
  EXPECT_EQ(file["otherData"]["strategy"], "ZeRO-3");
  const json rep = json::parse(std::ifstream(report));
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    std::int64_t rs_bytes = 0, steps = 0;
    bool named = false;
    for (const json& e : file["traceEvents"]) {
      if (e["pid"] != rank) continue;
      if (e["ph"] == "M" && e["name"] == "process_name") named = e["args"]["name"] == "rank " + std::to_string(rank);
      if (e["ph"] == "X" && e["name"] == "reduce_scatter") {
        EXPECT_EQ(e["args"]["bytes"].get<std::int64_t>(), 4 * e["args"]["elements"].get<std::int64_t>());
        rs_bytes += e["args"]["bytes"].get<std::int64_t>();
      }
      if (e["ph"] == "X" && e["name"] == "optimizer_step") ++steps;
    }
    EXPECT_TRUE(named);
    EXPECT_EQ(steps, 2);
    // Only training reduce-scatters (evaluation gathers, never reduces): 2 steps of the report's last one.
    EXPECT_EQ(rs_bytes, 2 * rep["ranks"][rank]["comm_last_step"]["reduce_scatter"]["bytes"].get<std::int64_t>());
  }
  // frames.json (docs/frames.md) beside it, read as the players read it, and its page.
  EXPECT_THAT(r.output, HasSubstr("wrote " + out + "/frames.json"));
  const minitorch::trace::FramesDoc frames = minitorch::trace::read_frames_file(out + "/frames.json");
  EXPECT_EQ(frames.strategy, "ZeRO-3");
  EXPECT_EQ(frames.world_size, 2);
  EXPECT_EQ(frames.num_parameters, rep["num_parameters"].get<std::int64_t>());
  ASSERT_FALSE(frames.frames.empty());
  EXPECT_EQ(frames.frames.front().phase, "init");
  EXPECT_EQ(frames.frames.back().step, 2);
  std::int64_t rs_elements = 0;  // the frames' reduce-scatters of the last step = the report's
  for (const auto& f : frames.frames)
    if (f.step == 2 && f.collective && f.collective->op == "reduce_scatter") rs_elements += f.collective->elements;
  EXPECT_EQ(rs_elements, rep["ranks"][0]["comm_last_step"]["reduce_scatter"]["elements"].get<std::int64_t>());
  const std::string page = mt_test::read_text(out + "/trace.html");
  EXPECT_THAT(page, HasSubstr("<svg"));
  EXPECT_THAT(page, HasSubstr("all-gather h.0"));  // the recorded frames, inlined
}

TEST(L07_TraceCli, AnUnwritableTraceDirectoryIsRefusedBeforeTraining) {
  mt_test::TempDir dir;
  const std::string file = dir.write("taken", "x");
  auto r = run_command(mt_test::bin("minitorch-train") + " --config " + mt_test::source("configs/baby.json") +
                       " --steps 1 --out '' --trace " + file + "/sub");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--trace"));
  EXPECT_THAT(r.output, testing::Not(HasSubstr("model GPTConfig")));
}

// A pipeline run's trace is the schedule's picture: on each rank's compute track one F<m> and one B<m>
// slice per micro-batch per step, in the schedule's order (GPipe here: all forwards, then the
// backwards from the last micro-batch), and an arrow from every send to its receive.
TEST(L09_TraceCli, PipelineRunDrawsTheScheduleAndJoinsEachSendToItsReceive) {
  mt_test::TempDir dir;
  const std::string data = mt_test::write_corpus(dir), out = dir.path("trace"), config = dir.path("pipe.json");
  std::ofstream(config) << R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "pipeline": {"stages": 2, "schedule": "gpipe", "partition_method": "uniform"},
    "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 16, "block_size": 16},
    "training": {"steps": 2, "eval_interval": 0, "checkpoint": ""}})";
  auto r = run_command(mt_test::mpirun_command("minitorch-train", 2, "--config " + config + " --data " + data +
                                                                         " --trace " + out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("wrote " + out + "/trace.json"));
  EXPECT_THAT(r.output, HasSubstr("wrote " + out + "/trace.html"));  // the pipeline page (pipeline_browser_check.py)
  EXPECT_THAT(r.output, HasSubstr("no frames.json"));
  EXPECT_FALSE(std::filesystem::exists(out + "/frames.json"));
  const json file = json::parse(std::ifstream(out + "/trace.json"));
  EXPECT_EQ(minitorch::trace::check_chrome_trace(file), "");
  EXPECT_EQ(file["otherData"]["pipeline_stages"], 2);
  std::string slices[2];
  int sends = 0, receives = 0, arrows = 0;
  for (const json& e : file["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] == 0) {
      const std::string name = e["name"];
      if (name.size() == 2 && (name[0] == 'F' || name[0] == 'B')) slices[e["pid"].get<int>()] += name + " ";
    }
    if (e["ph"] == "X" && e["name"] == "send") ++sends;
    if (e["ph"] == "X" && e["name"] == "recv") ++receives;
    if (e["ph"] == "s" && e["name"].get<std::string>().rfind("p2p ", 0) == 0) ++arrows;
  }
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_EQ(slices[rank], "F0 F1 F2 B2 B1 B0 F0 F1 F2 B2 B1 B0 ") << "rank " << rank;
  // per step: 3 activations, 3 gradients, the tied gradient and the tied weight
  EXPECT_EQ(sends, 2 * 8);
  EXPECT_EQ(receives, 2 * 8);
  EXPECT_EQ(arrows, 2 * 8);
}
