// Step traces in the Chrome Trace Event format (trace/chrome_trace.h): events of a rank become X slices
// on their stream's thread (collectives that overlap get lanes), counters per allocator tag, and a
// file whose structure check_chrome_trace() accepts; the checker itself rejects each kind of mistake.
#include <gtest/gtest.h>

#include <set>

#include "minitorch/tensor.h"
#include "trace/chrome_trace.h"

using namespace minitorch;
using nlohmann::json;

namespace {
events::Event span(events::Kind kind, events::Category cat, const std::string& name, std::uint64_t id, double t,
                   std::int64_t elements = 0) {
  events::Event e;
  e.kind = kind;
  e.category = cat;
  e.name = name;
  e.id = id;
  e.time_us = t;
  e.elements = elements;
  e.bytes = 4 * elements;
  return e;
}
const std::array<std::int64_t, kNumMemTags> kNoMemory{};

/// A rank's backward with two reduce-scatters in flight at once and an all-gather after it.
std::vector<events::Event> one_rank() {
  using K = events::Kind;
  using C = events::Category;
  std::vector<events::Event> v = {
      span(K::begin, C::compute, "backward", 1, 10),
      span(K::begin, C::comm, "reduce_scatter", 2, 20, 100),
      span(K::begin, C::comm, "reduce_scatter", 3, 30, 200),  // overlaps the first: a second lane
      span(K::end, C::comm, "reduce_scatter", 2, 40),
      span(K::end, C::compute, "backward", 1, 50),
      span(K::end, C::comm, "reduce_scatter", 3, 60),
      span(K::begin, C::comm, "all_gather", 4, 70, 300),
  };  // the all-gather never ends: closed at the last timestamp, marked unfinished
  events::Event alloc;
  alloc.category = C::memory;
  alloc.kind = K::alloc;
  alloc.tag = MemTag::grad;
  alloc.bytes = 4096;
  alloc.time_us = 25;
  v.insert(v.begin() + 2, alloc);
  return v;
}

const json* find(const json& events, const std::string& ph, const std::string& name, int nth = 0) {
  for (const json& e : events)
    if (e["ph"] == ph && e.value("name", "") == name && nth-- == 0) return &e;
  return nullptr;
}
}  // namespace

TEST(L07_ChromeTrace, SpansBecomeSlicesOnTheirStreamAndOverlappingCollectivesGetLanes) {
  const json ev = trace::chrome_events(one_rank(), 2, kNoMemory, 0);
  const json* backward = find(ev, "X", "backward");
  ASSERT_NE(backward, nullptr);
  EXPECT_EQ((*backward)["tid"], 0);
  EXPECT_EQ((*backward)["pid"], 2);
  EXPECT_DOUBLE_EQ((*backward)["ts"].get<double>(), 10);
  EXPECT_DOUBLE_EQ((*backward)["dur"].get<double>(), 40);
  const json *rs0 = find(ev, "X", "reduce_scatter", 0), *rs1 = find(ev, "X", "reduce_scatter", 1);
  ASSERT_TRUE(rs0 && rs1);
  EXPECT_EQ((*rs0)["tid"], trace::comm_thread("reduce_scatter"));
  EXPECT_EQ((*rs1)["tid"], 10 * trace::comm_thread("reduce_scatter") + 1) << "in flight together: its own lane";
  EXPECT_EQ((*rs1)["args"]["elements"], 200);
  EXPECT_EQ((*rs1)["args"]["bytes"], 800);
  EXPECT_EQ((*rs1)["args"]["seq"], 1);
  const json* ag = find(ev, "X", "all_gather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ((*ag)["args"]["unfinished"], true);
  EXPECT_DOUBLE_EQ((*ag)["dur"].get<double>(), 0);
  // Memory: the starting values, then each change.
  EXPECT_EQ(ev[0]["ph"], "C");
  const json* grad = nullptr;
  for (const json& e : ev)
    if (e["ph"] == "C" && e["args"].contains("grad") && e["ts"].get<double>() > 0) grad = &e;
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ((*grad)["args"]["grad"], 4096);
}

TEST(L07_ChromeTrace, CollectivesPairUpByLaunchOrderEvenWhenTheyCompleteInAnother) {
  using K = events::Kind;
  using C = events::Category;
  // The second reduce-scatter (200 elements) completes first on this rank.
  const std::vector<events::Event> v = {span(K::begin, C::comm, "reduce_scatter", 2, 20, 100),
                                        span(K::begin, C::comm, "reduce_scatter", 3, 30, 200),
                                        span(K::end, C::comm, "reduce_scatter", 3, 40),
                                        span(K::end, C::comm, "reduce_scatter", 2, 50)};
  const json ev = trace::chrome_events(v, 0, kNoMemory, 0);
  for (const json& e : ev)
    if (e["ph"] == "X") {
      EXPECT_EQ(e["args"]["seq"], e["args"]["elements"] == 100 ? 0 : 1) << e.dump();
    }
}

TEST(L07_ChromeTrace, TwoRanksMakeAValidFileWithNamedTracksAndFlowsBetweenTheRanksOfACollective) {
  const json file = trace::chrome_trace({trace::chrome_events(one_rank(), 0, kNoMemory, 0),
                                         trace::chrome_events(one_rank(), 1, kNoMemory, 0)},
                                        {{"strategy", "ZeRO-2"}});
  EXPECT_EQ(trace::check_chrome_trace(file), "");
  EXPECT_EQ(file["otherData"]["strategy"], "ZeRO-2");
  EXPECT_EQ(file["displayTimeUnit"], "ms");
  const json& ev = file["traceEvents"];
  const json* rank1 = nullptr;
  for (const json& e : ev)
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == 1) rank1 = &e;
  ASSERT_NE(rank1, nullptr);
  EXPECT_EQ((*rank1)["args"]["name"], "rank 1");
  int starts = 0, finishes = 0;
  for (const json& e : ev) starts += e["ph"] == "s", finishes += e["ph"] == "f";
  EXPECT_EQ(starts, 3) << "reduce_scatter #0, #1 and the all_gather: each joins its two ranks";
  EXPECT_EQ(finishes, 3);
}

TEST(L07_ChromeTrace, TheCheckerRejectsEachKindOfMistake) {
  const json good = trace::chrome_trace({trace::chrome_events(one_rank(), 0, kNoMemory, 0)});
  ASSERT_EQ(trace::check_chrome_trace(good), "");
  auto broken = [&](const std::function<void(json&)>& edit) {
    json t = good;
    edit(t["traceEvents"]);
    return trace::check_chrome_trace(t);
  };
  auto add_x = [](json& ev, double ts, double dur) {
    ev.push_back({{"ph", "X"}, {"name", "x"}, {"pid", 0}, {"tid", 0}, {"ts", ts}, {"dur", dur}});
  };
  EXPECT_NE(broken([&](json& ev) { add_x(ev, 45, 10); }).find("overlap without nesting"), std::string::npos)
      << "backward is [10, 50): [45, 55) crosses its end";
  EXPECT_EQ(broken([&](json& ev) { add_x(ev, 20, 10); }), "") << "[20, 30) nests inside [10, 50)";
  EXPECT_NE(broken([](json& ev) { ev.push_back({{"ph", "Q"}, {"pid", 0}}); }).find("unknown ph"), std::string::npos);
  EXPECT_NE(broken([](json& ev) { ev.push_back({{"ph", "X"}, {"name", "x"}, {"pid", 0}, {"tid", 0}, {"ts", 1}}); }).find("dur"),
            std::string::npos);
  EXPECT_NE(broken([](json& ev) { ev.push_back({{"ph", "i"}, {"name", "x"}, {"pid", 7}, {"tid", 0}, {"ts", 1}}); })
                .find("no process_name"),
            std::string::npos);
  EXPECT_NE(broken([](json& ev) { ev.push_back({{"ph", "i"}, {"name", "x"}, {"pid", 0}, {"tid", 99}, {"ts", 1}}); })
                .find("no thread_name"),
            std::string::npos);
  EXPECT_NE(broken([](json& ev) {
              ev.push_back({{"ph", "b"}, {"name", "a"}, {"cat", "c"}, {"id", 5}, {"pid", 0}, {"tid", 0}, {"ts", 1}});
            }).find("not balanced"),
            std::string::npos);
  EXPECT_NE(broken([](json& ev) { ev.push_back({{"ph", "s"}, {"name", "a"}, {"id", 77}, {"pid", 0}, {"tid", 0}, {"ts", 1}}); })
                .find("one start and one finish"),
            std::string::npos);
  EXPECT_NE(broken([](json& ev) { ev.push_back({{"ph", "C"}, {"name", "m"}, {"pid", 0}, {"ts", 1}, {"args", {{"a", "x"}}}}); })
                .find("not a number"),
            std::string::npos);
}

TEST(L10_ChromeTrace, CopiesAndTheHostStepHaveTheirThreadsAndEachPoolItsCounters) {
  using K = events::Kind;
  using C = events::Category;
  std::vector<events::Event> v = {
      span(K::begin, C::transfer, "d2h", 1, 10), span(K::end, C::transfer, "d2h", 1, 12),
      span(K::begin, C::compute, "host_optimizer_step", 2, 13), span(K::end, C::compute, "host_optimizer_step", 2, 20),
      span(K::begin, C::transfer, "h2d", 3, 21), span(K::end, C::transfer, "h2d", 3, 22)};
  v[0].bytes = 4096, v[0].tag = MemTag::grad, v[0].scope = "model";
  v[4].bytes = 2048, v[4].tag = MemTag::param, v[4].scope = "model";
  events::Event on_device;  // the device's pool, and the host's
  on_device.category = C::memory, on_device.kind = K::alloc, on_device.tag = MemTag::param, on_device.bytes = 100;
  on_device.device = 1, on_device.time_us = 5;
  events::Event on_host = on_device;
  on_host.device = 0, on_host.tag = MemTag::optim, on_host.bytes = 300;
  v.insert(v.begin(), {on_device, on_host});
  std::array<std::int64_t, kNumMemTags> device_start{};
  device_start[static_cast<int>(MemTag::param)] = 1000;
  const json mine = trace::chrome_events(v, 0, kNoMemory, 0, device_start);
  const json file = trace::chrome_trace({mine}, {});
  EXPECT_EQ(trace::check_chrome_trace(file), "");
  const json* down = find(mine, "X", "d2h");
  const json* up = find(mine, "X", "h2d");
  const json* host = find(mine, "X", "host_optimizer_step");
  ASSERT_TRUE(down && up && host);
  EXPECT_EQ((*down)["tid"], 7);
  EXPECT_EQ((*down)["args"]["bytes"], 4096);
  EXPECT_EQ((*down)["args"]["tag"], "grad");
  EXPECT_EQ((*down)["args"]["purpose"], "model");
  EXPECT_EQ((*up)["tid"], 6);
  EXPECT_EQ((*host)["tid"], 8);
  std::set<std::string> threads;
  for (const json& e : file["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
  for (const char* name : {"h2d", "d2h", "host"}) EXPECT_TRUE(threads.count(name)) << name;
  const json* device_counter = find(mine, "C", "device memory", 1);  // after its starting values
  ASSERT_NE(device_counter, nullptr);
  EXPECT_EQ((*device_counter)["args"]["param"], 1100) << "the device's pool starts from its own bytes";
  const json* host_counter = find(mine, "C", "memory", 1);
  ASSERT_NE(host_counter, nullptr);
  EXPECT_EQ((*host_counter)["args"]["optim"], 300);
}
