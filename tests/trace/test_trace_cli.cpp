// minitorch-trace: the terminal player's output for the 2-rank ZeRO-1 sample matches its golden file,
// and a bad DIR or frames.json is one clear error naming the file.
//
// After a deliberate change to the output, regenerate the golden file and read the diff:
//   build/bin/minitorch-trace tests/trace/data/zero1_2ranks --plain --auto > tests/trace/data/zero1_2ranks.golden.txt
// (the samples themselves: python3 tests/trace/data/make_samples.py)
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"

using mt_test::bin;
using mt_test::contains;
using mt_test::run_command;
using mt_test::source;

namespace {

std::string trace_cmd(const std::string& args) { return bin("minitorch-trace") + " " + args; }

/// The first line where `a` and `b` differ, for a readable failure.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int n = 1;; ++n) {
    const bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "(no difference)";
    if (!ga || !gb || la != lb)
      return "line " + std::to_string(n) + ":\n  got:      " + (ga ? la : "(end)") + "\n  expected: " + (gb ? lb : "(end)");
  }
}

}  // namespace

TEST(L06_TraceTerminal, Zero1TwoRanksPlainMatchesGolden) {
  const auto r = run_command(trace_cmd(source("tests/trace/data/zero1_2ranks") + " --plain --auto"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string golden = mt_test::read_text(source("tests/trace/data/zero1_2ranks.golden.txt"));
  ASSERT_FALSE(golden.empty());
  EXPECT_EQ(r.output, golden) << first_difference(r.output, golden)
                              << "\n(if the change is meant: see tests/trace/test_trace_cli.cpp for the command that "
                                 "regenerates the golden file)";
  EXPECT_FALSE(contains(r.output, "\x1b[")) << "--plain printed an escape code";
}

TEST(L06_TraceTerminal, ColourByDefaultAndOneFrameWithFrameK) {
  const auto r = run_command(trace_cmd(source("tests/trace/data/zero1_2ranks") + " --frame 4"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\x1b[")) << "no colour without --plain";
  EXPECT_TRUE(contains(r.output, "frame 4/10"));
  EXPECT_FALSE(contains(r.output, "frame 3/10"));
  EXPECT_FALSE(contains(r.output, "frame 5/10"));
  EXPECT_TRUE(contains(r.output, "reduce_scatter bucket 4 (h.3) [611328, 809600): 99136 elements, 396544 bytes per rank, ranks 0,1"));
}

TEST(L06_TraceTerminal, InteractiveStopsAtTheEndOfInput) {
  // stdin is /dev/null: the first prompt reads the end of the input and quits cleanly
  const auto r = run_command(trace_cmd(source("tests/trace/data/zero1_2ranks") + " --plain"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "frame 1/10"));
  EXPECT_FALSE(contains(r.output, "frame 2/10"));
  EXPECT_TRUE(contains(r.output, "(quit at frame 1/10)"));
  const auto q = run_command("printf '\\nq\\n' | " + trace_cmd(source("tests/trace/data/zero1_2ranks") + " --plain") + " 2>&1 #");
  EXPECT_EQ(q.exit_code, 0) << q.output;
  EXPECT_TRUE(contains(q.output, "frame 2/10"));
  EXPECT_TRUE(contains(q.output, "(quit at frame 2/10)"));
}

TEST(L07_TraceTerminal, Zero3FourRanksShowsEveryFrame) {
  const auto r = run_command(trace_cmd(source("tests/trace/data/zero3_4ranks") + " --plain --auto"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "frame 27/27"));
  EXPECT_TRUE(contains(r.output, "all_gather bucket 1 (h.0) [16512, 214784): 148704 elements, 594816 bytes per rank, ranks 0-3"));
  EXPECT_TRUE(contains(r.output, "% of 6.00 MiB)"));
}

TEST(L06_TraceTerminal, EscapeSequencesInAFramesFileAreShownNotSent) {
  // A frames file is data: a caption or bucket name holding ESC [ 2 J must not clear the reader's terminal.
  mt_test::TempDir tmp;
  auto doc = nlohmann::json::parse(mt_test::read_text(source("tests/trace/data/zero1_2ranks/frames.json")));
  doc["frames"][0]["caption"] = "before\u001b[2Jafter";
  doc["frames"][0]["label"] = "label\u001b[31m";
  tmp.write("frames.json", doc.dump());
  const auto r = run_command(trace_cmd(tmp.dir.string() + " --plain --auto --frame 1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "\x1b")) << "an escape sequence reached the terminal";
  EXPECT_TRUE(contains(r.output, "before\\x1b[2Jafter")) << r.output;
  EXPECT_TRUE(contains(r.output, "label\\x1b[31m")) << r.output;
}

TEST(L07_TraceTerminal, HtmlWritesTracePage) {
  mt_test::TempDir tmp;
  tmp.write("frames.json", mt_test::read_text(source("tests/trace/data/zero3_4ranks/frames.json")));
  const auto r = run_command(trace_cmd(tmp.dir.string() + " --html"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "wrote " + tmp.path("trace.html")));
  EXPECT_TRUE(contains(mt_test::read_text(tmp.path("trace.html")), "ZeRO-3"));
}

TEST(L07_TraceTerminal, BadDirOrFramesIsOneClearError) {
  mt_test::TempDir tmp;
  auto r = run_command(trace_cmd(tmp.path("nowhere")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(contains(r.output, "nowhere': no such directory")) << r.output;

  r = run_command(trace_cmd(tmp.dir.string() + " --auto"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "error: frames '" + tmp.path("frames.json") + "': no such file")) << r.output;

  tmp.write("frames.json", "{\"format\": \"minitorch-frames-1\", \"run\": [1, 2");
  r = run_command(trace_cmd(tmp.dir.string() + " --auto"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(contains(r.output, "error: frames '" + tmp.path("frames.json") + "': malformed JSON")) << r.output;

  r = run_command(trace_cmd(tmp.dir.string() + " --html"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "malformed JSON")) << r.output;

  tmp.write("frames.json", "{\"format\": \"minitorch-frames-1\", \"run\": {\"world_size\": 0}}");
  r = run_command(trace_cmd(tmp.dir.string() + " --auto"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "run.world_size: must be in [1, 4096], got 0")) << r.output;
}

TEST(L07_TraceTerminal, ReducingHasItsCharacterAndTheHeaderAddsUpTheStep) {
  // Version 2 (docs/frames.md): a gradient shard whose reduce-scatter is in flight is "reducing", '%'.
  mt_test::TempDir tmp;
  auto doc = nlohmann::json::parse(mt_test::read_text(source("tests/trace/data/zero1_2ranks/frames.json")));
  doc["version"] = 2;
  // frame 4: h.3's reduce-scatter done; say rank 0's shard of h.2 ([413056, 512192)) is in flight
  doc["frames"][3]["ranks"][0]["grads"][0] = {{"begin", 0}, {"end", 413056}, {"state", "accumulating"}};
  doc["frames"][3]["ranks"][0]["grads"].insert(doc["frames"][3]["ranks"][0]["grads"].begin() + 1,
                                               {{{"begin", 413056}, {"end", 512192}, {"state", "reducing"}},
                                                {{"begin", 512192}, {"end", 611328}, {"state", "accumulating"}}});
  tmp.write("frames.json", doc.dump());
  const auto r = run_command(trace_cmd(tmp.dir.string() + " --plain --frame 4"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "% reducing")) << r.output;  // the legend
  EXPECT_TRUE(contains(r.output, "       grads    |~~|~~~~~~~~~~~~~~~~|~~~~~~~~~~~~~~~~|%%%%%%%%~~~~~~~~|********~~~~~~~~|"))
      << r.output;
  // the step's collectives so far: bucket 0's reduce-scatter, 99136 elements × 4 bytes
  EXPECT_TRUE(contains(r.output, "=== frame 4/10 | step 1 | micro 0 | reduce (collectives this step so far: 396544 B per rank) ==="))
      << r.output;
  // a newer version than this build reads: one error, naming the file and what to do
  doc["version"] = 99;
  tmp.write("frames.json", doc.dump());
  const auto newer = run_command(trace_cmd(tmp.dir.string() + " --plain --auto"));
  EXPECT_EQ(newer.exit_code, 1) << newer.output;
  EXPECT_EQ(mt_test::error_lines(newer.output), 1) << newer.output;
  EXPECT_TRUE(contains(newer.output, "error: frames '" + tmp.path("frames.json") + "': version: 99 is newer than this minitorch reads"))
      << newer.output;
}

TEST(L06_TraceTerminal, UsageErrorsExit2) {
  auto r = run_command(trace_cmd(""));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(trace_cmd(source("tests/trace/data/zero1_2ranks") + " --frame 11"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "error: --frame 11: the trace has frames 1-10")) << r.output;
  r = run_command(trace_cmd(source("tests/trace/data/zero1_2ranks") + " --frame 0"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(trace_cmd(source("tests/trace/data/zero1_2ranks") + " --bogus"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}
