// trace.html (trace/html_player.h): the frames are embedded, nothing can break out of their script
// block, the page is self-contained, and a bad frames.json is one error naming the file.
#include <gtest/gtest.h>

#include <fstream>
#include <cctype>
#include <sstream>

#include "test_util.h"
#include "trace/frames_reader.h"
#include "trace/html_player.h"

using namespace minitorch;
using mt_test::contains;

namespace {

const std::string kZero3 = mt_test::source("tests/trace/data/zero3_4ranks/frames.json");
const std::string kZero1 = mt_test::source("tests/trace/data/zero1_2ranks/frames.json");

/// The text between <script type="application/json" id="ID"> and the next </script>.
std::string embedded_json(const std::string& page, const std::string& id = "frames") {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const std::size_t a = page.find(open);
  if (a == std::string::npos) return "";
  const std::size_t b = page.find("</script>", a);
  return page.substr(a + open.size(), b - a - open.size());
}

}  // namespace

TEST(L07_TraceHtml, TemplateHoldsThePlaceholderOnceAndTheTestHooks) {
  const std::string& t = trace::player_template();
  const std::size_t at = t.find(trace::kFramesPlaceholder);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(t.find(trace::kFramesPlaceholder, at + 1), std::string::npos);
  for (const char* id : {"frame-index", "btn-first", "btn-prev", "btn-play", "btn-next", "btn-last", "scrub", "speed",
                         "step-bytes", "formula", "phases"})
    EXPECT_TRUE(contains(t, std::string("id=\"") + id + "\"")) << id;
  for (const char* hook : {"data-owner", "data-state", "data-kind", "data-begin", "data-end", "data-rank"})
    EXPECT_TRUE(contains(t, hook)) << hook;
}

TEST(L07_TraceHtml, EmbedsTheFramesAsTheSameJson) {
  const std::string text = mt_test::read_text(kZero3);
  const std::string page = trace::render_trace_html(text);
  EXPECT_FALSE(contains(page, trace::kFramesPlaceholder));
  const nlohmann::json embedded = nlohmann::json::parse(embedded_json(page));
  EXPECT_EQ(embedded, nlohmann::json::parse(text));
  EXPECT_EQ(embedded["frames"].size(), 27u);
}

TEST(L07_TraceHtml, ScriptEndInACaptionIsEscaped) {
  nlohmann::json j = nlohmann::json::parse(mt_test::read_text(kZero1));
  const std::string evil = "</script><script>alert(1)</script><!-- <SCRIPT";
  j["frames"][0]["caption"] = evil;
  j["frames"][1]["label"] = "</ScRiPt >";
  const std::string page = trace::render_trace_html(j.dump());
  // exactly the page's own two </script> (data block and code), and no "<" inside the data at all
  std::size_t ends = 0;
  for (std::size_t p = page.find("</script>"); p != std::string::npos; p = page.find("</script>", p + 1)) ++ends;
  EXPECT_EQ(ends, 2u);
  const std::string data = embedded_json(page);
  EXPECT_EQ(data.find('<'), std::string::npos);
  EXPECT_TRUE(contains(data, "\\u003c/script>"));
  // and it still means the same text
  const nlohmann::json back = nlohmann::json::parse(data);
  EXPECT_EQ(back["frames"][0]["caption"], evil);
  EXPECT_EQ(back["frames"][1]["label"], "</ScRiPt >");
}

TEST(L07_TraceHtml, PageIsSelfContained) {
  const std::string page = trace::render_trace_html(mt_test::read_text(kZero3));
  // no fetch of anything: the only URL is the SVG namespace name (an identifier, never loaded)
  const std::string ns = "http://www.w3.org/2000/svg";
  std::string rest = page;
  for (std::size_t p = rest.find(ns); p != std::string::npos; p = rest.find(ns)) rest.erase(p, ns.size());
  EXPECT_FALSE(contains(rest, "http:")) << "a URL in the page";
  EXPECT_FALSE(contains(rest, "https:")) << "a URL in the page";
  EXPECT_FALSE(contains(rest, "//cdn")) << "a CDN in the page";
  std::string lower = rest;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* bad : {"src=", "src =", "<link", "<iframe", "<img", "@import", "fetch(", "xmlhttprequest", "websocket",
                          "import(", "eventsource", "sendbeacon"})
    EXPECT_FALSE(contains(lower, bad)) << "the page holds '" << bad << "'";
  // url(...) only for the page's own patterns and markers: url(#id)
  for (std::size_t p = lower.find("url("); p != std::string::npos; p = lower.find("url(", p + 1))
    EXPECT_EQ(lower[p + 4], '#') << lower.substr(p, 40);
}

TEST(L07_TraceHtml, WriteTraceHtmlWritesNextToFramesJson) {
  mt_test::TempDir tmp;
  tmp.write("frames.json", mt_test::read_text(kZero1));
  const std::string out = trace::write_trace_html(tmp.dir.string());
  EXPECT_EQ(out, tmp.path("trace.html"));
  const std::string page = mt_test::read_text(out);
  EXPECT_TRUE(contains(page, "<!DOCTYPE html>"));
  EXPECT_EQ(nlohmann::json::parse(embedded_json(page))["run"]["strategy"], "ZeRO-1");
  // nothing else left behind (the atomic write's temporary file)
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tmp.dir)) ++files;
  EXPECT_EQ(files, 2);
}

TEST(L07_TraceHtml, BadFramesAreOneErrorNamingTheFile) {
  mt_test::TempDir tmp;
  EXPECT_TRUE(contains(mt_test::error_of([&] { trace::write_trace_html(tmp.dir.string()); }), "frames.json': no such file"));
  tmp.write("frames.json", "{\"format\": \"minitorch-frames-1\", ");
  const std::string e = mt_test::error_of([&] { trace::write_trace_html(tmp.dir.string()); });
  EXPECT_TRUE(contains(e, tmp.path("frames.json"))) << e;
  EXPECT_TRUE(contains(e, "malformed JSON")) << e;
  EXPECT_FALSE(std::filesystem::exists(tmp.path("trace.html")));
}

TEST(L07_TraceHtml, SchemaErrorsSayWhere) {
  nlohmann::json j = nlohmann::json::parse(mt_test::read_text(kZero3));
  auto error = [](const nlohmann::json& doc) { return mt_test::error_of([&] { trace::render_trace_html(doc.dump(), "f.json"); }); };
  nlohmann::json bad = j;
  bad["frames"][3]["ranks"][1]["params"][0]["state"] = "lost";
  EXPECT_TRUE(contains(error(bad), "frames 'f.json': frames[3].ranks[1].params[0].state: must be one of")) << error(bad);
  bad = j;
  bad["format"] = "minitorch-frames-2";
  EXPECT_TRUE(contains(error(bad), "format: expected \"minitorch-frames-1\"")) << error(bad);
  bad = j;
  bad["frames"][2]["ranks"].erase(std::size_t{3});
  EXPECT_TRUE(contains(error(bad), "frames[2].ranks: expected one entry per rank (4), got 3")) << error(bad);
  bad = j;
  std::swap(bad["frames"][5]["ranks"][0]["optim"][0], bad["frames"][5]["ranks"][0]["optim"][1]);
  EXPECT_TRUE(contains(error(bad), "frames[5].ranks[0].optim[1]: ranges must be sorted")) << error(bad);
  bad = j;
  bad["frames"][4]["collective"]["op"] = "gossip";
  EXPECT_TRUE(contains(error(bad), "frames[4].collective.op: must be one of")) << error(bad);
  bad = j;
  bad["space"]["buckets"][2]["end"] = 10'000'000;
  EXPECT_TRUE(contains(error(bad), "space.buckets[2].end: must be in [0, 809600]")) << error(bad);
  // a schema newer than this build's: refused, saying what to do; a version it knows is read
  bad = j;
  bad["version"] = trace::kFramesVersion + 1;
  EXPECT_TRUE(contains(error(bad), "frames 'f.json': version: " + std::to_string(trace::kFramesVersion + 1) +
                                       " is newer than this minitorch reads (versions 1 to " +
                                       std::to_string(trace::kFramesVersion) + "): play it with the minitorch that "
                                       "recorded it, or record it again"))
      << error(bad);
  bad["version"] = "2";
  EXPECT_TRUE(contains(error(bad), "version: expected a positive integer, got \"2\"")) << error(bad);
  bad["version"] = 0;
  EXPECT_TRUE(contains(error(bad), "version: expected a positive integer, got 0")) << error(bad);
  bad = j;
  bad["space"]["buckets"][1]["persistent"] = "yes";
  EXPECT_TRUE(contains(error(bad), "space.buckets[1].persistent: expected true or false")) << error(bad);
}

TEST(L07_TraceFrames, VersionOneFilesAndVersionTwoStatesAreRead) {
  // The samples are version 1 (no `version`): read as before, with the keys version 2 added absent.
  const trace::FramesDoc v1 = trace::read_frames_file(kZero3);
  EXPECT_EQ(v1.version, 1);
  EXPECT_EQ(v1.accumulation, 0);
  for (const trace::Bucket& b : v1.buckets) EXPECT_FALSE(b.persistent) << b.name;
  EXPECT_FALSE(trace::render_trace_html(mt_test::read_text(kZero3)).empty());
  // Version 2: "reducing", run.gradient_accumulation_steps and a persistent bucket.
  nlohmann::json j = nlohmann::json::parse(mt_test::read_text(kZero3));
  j["version"] = 2;
  j["run"]["gradient_accumulation_steps"] = 3;
  j["space"]["buckets"][4]["persistent"] = true;
  j["frames"][20]["ranks"][0]["grads"][0]["state"] = "reducing";
  const trace::FramesDoc v2 = trace::parse_frames(j, "v2");
  EXPECT_EQ(v2.version, 2);
  EXPECT_EQ(v2.accumulation, 3);
  EXPECT_TRUE(v2.buckets[4].persistent);
  EXPECT_EQ(v2.frames[20].ranks[0].grads[0].state, "reducing");
  // the running total of a step's collectives through a frame, as both players show it
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < v2.frames.size(); ++i) {
    if (i > 0 && v2.frames[i].step != v2.frames[i - 1].step) sum = 0;
    sum += v2.frames[i].collective ? v2.frames[i].collective->bytes : 0;
    EXPECT_EQ(v2.step_bytes_through(i), sum) << "frame " << i;
  }
  // Version 3: "staged", a tile of the optimizer's states in host memory (ZeRO-Infinity's step on NVMe).
  j["version"] = 3;
  j["frames"][20]["ranks"][0]["optim"] = nlohmann::json::array({{{"begin", 0}, {"end", 8}, {"state", "staged"}}});
  const trace::FramesDoc v3 = trace::parse_frames(j, "v3");
  EXPECT_EQ(v3.version, 3);
  EXPECT_EQ(v3.frames[20].ranks[0].optim[0].state, "staged");
  EXPECT_FALSE(trace::render_trace_html(j.dump()).empty());
}

TEST(L07_TraceFrames, OwnersFollowTheShardsOfEachBucket) {
  const trace::FramesDoc d = trace::read_frames_file(kZero3);
  ASSERT_EQ(d.world_size, 4);
  ASSERT_EQ(d.buckets.size(), 5u);
  EXPECT_EQ(d.owner_of(0), 0);
  EXPECT_EQ(d.owner_of(4127), 0);
  EXPECT_EQ(d.owner_of(4128), 1);
  EXPECT_EQ(d.owner_of(16511), 3);
  EXPECT_EQ(d.owner_of(16512), 0);
  EXPECT_EQ(d.owner_of(16512 + 49568), 1);
  EXPECT_EQ(d.owner_of(809599), 3);
  EXPECT_EQ(d.owner_of(809600), -1);
  // memory: the known tags in order, the total as the file says
  const trace::RankState& r0 = d.frames[0].ranks[0];
  EXPECT_EQ(r0.memory[0].first, "param");
  EXPECT_EQ(r0.memory[0].second, 809600);
  EXPECT_EQ(r0.memory_total(), 809600 + 1619200 + 4096);
}

// ---- a pipeline run's page (trace/pipeline_player.html) ----

TEST(L09_TraceHtml, PipelinePageEmbedsTheTraceWithoutMemoryAndThePrediction) {
  const std::string& t = trace::pipeline_player_template();
  const std::size_t at = t.find(trace::kPipelinePlaceholder);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(t.find(trace::kPipelinePlaceholder, at + 1), std::string::npos);
  for (const char* id : {"step-index", "btn-play", "btn-start", "btn-end", "btn-prev-step", "btn-next-step", "alive", "time"})
    EXPECT_TRUE(contains(t, std::string("id=\"") + id + "\"")) << id;
  const nlohmann::json tr = {
      {"traceEvents",
       {{{"ph", "X"}, {"name", "F0"}, {"pid", 0}, {"tid", 0}, {"ts", 1.0}, {"dur", 2.0}},
        {{"ph", "C"}, {"name", "memory"}, {"pid", 0}, {"ts", 1.0}, {"args", {{"activation", 64}}}},
        {{"ph", "i"}, {"name", "step_end"}, {"pid", 0}, {"tid", 0}, {"ts", 9.0}, {"args", {{"step", 0}, {"scope", "</script><!--"}}}}}},
      {"otherData", {{"pipeline_stages", 2}}}};
  const nlohmann::json predicted = {{"stages", nlohmann::json::array()}, {"span", 3}, {"bubble", 0.25}, {"micro_batches", 1}};
  const std::string page = trace::render_pipeline_html(tr, predicted);
  const std::string data = embedded_json(page, "pipeline");
  EXPECT_EQ(data.find('<'), std::string::npos) << "a '<' in the data could end its script block";
  const nlohmann::json back = nlohmann::json::parse(data);
  EXPECT_EQ(back["predicted"], predicted);
  ASSERT_EQ(back["trace"]["traceEvents"].size(), 2u) << "the memory counter is dropped";
  EXPECT_EQ(back["trace"]["traceEvents"][1]["args"]["scope"], "</script><!--");
  EXPECT_EQ(back["trace"]["otherData"]["pipeline_stages"], 2);
  EXPECT_THROW(trace::render_pipeline_html(nlohmann::json::array(), predicted), trace::FramesError);
}
