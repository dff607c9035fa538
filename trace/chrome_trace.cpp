#include "trace/chrome_trace.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace minitorch::trace {

using nlohmann::json;

TraceRecorder::TraceRecorder(events::Sink* forward, Device device) : forward_(forward) {
  const MemoryStats m = memory_stats(Device::cpu());
  for (int t = 0; t < kNumMemTags; ++t) initial_memory_[static_cast<std::size_t>(t)] = m.current(static_cast<MemTag>(t));
  if (!device.is_cpu()) {
    const MemoryStats d = memory_stats(device);
    for (int t = 0; t < kNumMemTags; ++t)
      initial_device_memory_[static_cast<std::size_t>(t)] = d.current(static_cast<MemTag>(t));
  }
  start_us_ = events::now_us();
}

void TraceRecorder::on_event(const events::Event& e) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (recording_) events_.push_back(e);
  }
  if (forward_) forward_->on_event(e);
}

void TraceRecorder::stop_recording() {
  std::lock_guard<std::mutex> lock(mutex_);
  recording_ = false;
}

bool TraceRecorder::recording() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recording_;
}

std::vector<events::Event> TraceRecorder::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

namespace {
const char* const kCommOps[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "p2p"};

json thread_name(int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}
}  // namespace

int comm_thread(const std::string& op) {
  if (op == "send" || op == "recv") return 5;
  for (int i = 0; i < 4; ++i)
    if (op == kCommOps[i]) return i + 1;
  return 0;
}

/// The thread of a span: a collective's stream, the copies' (6 h2d, 7 d2h), the host step's (8), the NVMe
/// swap's reads and writes (9 disk), else 0.
int stream_of(const events::Event& b) {
  if (b.category == events::Category::comm) return comm_thread(b.name);
  if (b.category == events::Category::transfer) return b.name == "h2d" ? 6 : b.name == "d2h" ? 7 : 9;
  if (b.category == events::Category::compute && b.name == "host_optimizer_step") return 8;
  return 0;
}

// ---- one rank ----

json chrome_events(const std::vector<events::Event>& evs, int rank, const std::array<std::int64_t, kNumMemTags>& memory,
                   double start_us, const std::array<std::int64_t, kNumMemTags>& device_memory) {
  json out = json::array();
  auto ts = [&](double t) { return std::max(0.0, t - start_us); };
  // Memory: counters from the allocator's bytes when recording began.
  std::array<std::int64_t, kNumMemTags> mem = memory;
  json first = json::object();
  for (int t = 0; t < kNumMemTags; ++t) first[tag_name(static_cast<MemTag>(t))] = mem[static_cast<std::size_t>(t)];
  out.push_back({{"ph", "C"}, {"name", "memory"}, {"pid", rank}, {"ts", 0.0}, {"args", first}});
  // A device's pool (sim, cuda) gets counters of its own, when the rank has any of its events.
  std::array<std::int64_t, kNumMemTags> dev = device_memory;
  if (std::any_of(evs.begin(), evs.end(), [](const events::Event& e) {
        return e.category == events::Category::memory && e.device != 0;
      })) {
    json start = json::object();
    for (int t = 0; t < kNumMemTags; ++t) start[tag_name(static_cast<MemTag>(t))] = dev[static_cast<std::size_t>(t)];
    out.push_back({{"ph", "C"}, {"name", "device memory"}, {"pid", rank}, {"ts", 0.0}, {"args", start}});
  }

  // Collectives get lanes: a collective goes on the first lane of its op that is free at its start,
  // so X events on one thread never overlap (tid = 10 * stream + lane; lane 0 is the stream's tid).
  std::map<int, std::vector<double>> lane_end;  // stream -> end of the last event on each lane
  // op -> how many launched so far: the ranks' k-th launches of an op pair up (every rank launches its
  // collectives in the same order; they may complete in another, e.g. two reduce-scatters in flight)
  std::map<std::string, std::int64_t> seq;
  std::map<std::uint64_t, std::int64_t> seq_of;  // begin id -> its launch number
  std::map<std::uint64_t, const events::Event*> open;
  double last = 0;
  auto close = [&](const events::Event& b, double end_us, bool unfinished) {
    json args = json::object();
    if (!b.scope.empty()) args["scope"] = b.scope;
    if (b.micro_step >= 0) args["micro_step"] = b.micro_step;
    const int stream = stream_of(b);
    int tid = 0;
    if (stream > 0) {
      if (b.category == events::Category::comm) {
        args["elements"] = b.elements;
        args["bytes"] = b.bytes;
        if (b.range_begin >= 0) args["range"] = {b.range_begin, b.range_end};
        if (b.peer >= 0) args["peer"] = b.peer;
        args["seq"] = seq_of.at(b.id);
      } else if (b.category == events::Category::transfer) {
        args["bytes"] = b.bytes;
        args["tag"] = tag_name(b.tag);
        args["purpose"] = b.scope;  // "model" or "io"
        args.erase("scope");
      }
      std::vector<double>& lanes = lane_end[stream];
      std::size_t lane = 0;
      while (lane < lanes.size() && lanes[lane] > ts(b.time_us)) ++lane;
      if (lane == lanes.size()) lanes.push_back(0);
      lanes[lane] = ts(end_us);
      tid = lane == 0 ? stream : 10 * stream + static_cast<int>(lane);
    }
    if (unfinished) args["unfinished"] = true;
    out.push_back({{"ph", "X"}, {"name", b.name}, {"cat", b.category == events::Category::comm ? "comm" : events::category_name(b.category)},
                   {"pid", rank}, {"tid", tid}, {"ts", ts(b.time_us)}, {"dur", ts(end_us) - ts(b.time_us)},
                   {"args", args}});
  };
  for (const events::Event& e : evs) {
    last = std::max(last, e.time_us);
    switch (e.kind) {
      case events::Kind::alloc:
      case events::Kind::free: {
        std::int64_t& cur = (e.device == 0 ? mem : dev)[static_cast<std::size_t>(e.tag)];
        cur += e.kind == events::Kind::alloc ? e.bytes : -e.bytes;
        out.push_back({{"ph", "C"}, {"name", e.device == 0 ? "memory" : "device memory"}, {"pid", rank},
                       {"ts", ts(e.time_us)}, {"args", {{tag_name(e.tag), cur}}}});
        break;
      }
      case events::Kind::begin:
        open[e.id] = &e;
        // a send or recv pairs with the other side's k-th transfer between the same two ranks
        if (e.category == events::Category::comm && comm_thread(e.name) > 0)
          seq_of[e.id] = seq[comm_thread(e.name) == 5 ? e.name + " " + std::to_string(e.peer) : e.name]++;
        break;
      case events::Kind::end: {
        auto it = open.find(e.id);
        if (it == open.end()) break;  // began before recording did
        close(*it->second, e.time_us, false);
        open.erase(it);
        break;
      }
      case events::Kind::instant: {
        json args = json::object();
        if (e.step >= 0) args["step"] = e.step;
        if (!e.scope.empty()) args["scope"] = e.scope;
        out.push_back({{"ph", "i"}, {"s", "t"}, {"name", e.name}, {"cat", events::category_name(e.category)},
                       {"pid", rank}, {"tid", 0}, {"ts", ts(e.time_us)}, {"args", args}});
        break;
      }
    }
  }
  // Sorted by start, so lanes are assigned in time order and the unfinished close last.
  std::vector<const events::Event*> left;
  for (const auto& [id, b] : open) left.push_back(b);
  std::sort(left.begin(), left.end(), [](auto* a, auto* b) { return a->time_us < b->time_us; });
  for (const events::Event* b : left) close(*b, last, true);
  return out;
}

// ---- every rank ----

json chrome_trace(const std::vector<json>& per_rank, const json& about) {
  json all = json::array();
  std::set<std::pair<int, int>> threads;
  // The ranks of one collective: the k-th collective of an op on every rank, chained by a flow.
  std::map<std::pair<std::string, std::int64_t>, std::vector<const json*>> groups;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    const int pid = static_cast<int>(r);
    all.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", "rank " + std::to_string(r)}}}});
    all.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    for (const json& e : per_rank[r]) {
      if (e.contains("tid")) threads.insert({pid, e["tid"].get<int>()});
      if (e["ph"] != "X" || e["cat"] != "comm" || !e["args"].contains("seq")) continue;
      const std::string op = e["name"].get<std::string>();
      if (op == "send" || op == "recv") {  // sender -> receiver: "p2p 0>2"
        const int peer = e["args"].value("peer", -1);
        const std::string key = op == "send" ? std::to_string(pid) + ">" + std::to_string(peer)
                                             : std::to_string(peer) + ">" + std::to_string(pid);
        groups[{"p2p " + key, e["args"]["seq"].get<std::int64_t>()}].push_back(&e);
      } else {
        groups[{op, e["args"]["seq"].get<std::int64_t>()}].push_back(&e);
      }
    }
  }
  for (const auto& [pid, tid] : threads) {
    const int stream = tid < 10 ? tid : tid / 10;
    std::string name = stream == 0   ? "compute"
                       : stream == 5 ? "p2p"
                       : stream == 6 ? "h2d"
                       : stream == 7 ? "d2h"
                       : stream == 8 ? "host"
                       : stream == 9 ? "disk"
                                     : kCommOps[stream - 1];
    if (tid >= 10) name += " (" + std::to_string(tid % 10 + 1) + ")";
    all.push_back(thread_name(pid, tid, name));
    all.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  }
  for (const json& rank : per_rank)
    for (const json& e : rank) all.push_back(e);
  std::int64_t flow_id = 1;
  for (auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    // by start; a transfer's arrow starts at its send (the receiver may have been waiting before it)
    std::sort(members.begin(), members.end(), [](const json* a, const json* b) {
      const bool sa = (*a)["name"] == "send", sb = (*b)["name"] == "send";
      return sa != sb ? sa : (*a)["ts"] < (*b)["ts"];
    });
    for (std::size_t i = 0; i < members.size(); ++i) {
      const json& e = *members[i];
      const char* ph = i == 0 ? "s" : i + 1 == members.size() ? "f" : "t";
      json flow = {{"ph", ph}, {"name", key.first}, {"cat", "collective"}, {"id", flow_id}, {"pid", e["pid"]},
                   {"tid", e["tid"]}, {"ts", e["ts"]}};
      if (i > 0) flow["bp"] = "e";  // bind to the slice that encloses ts: the collective itself
      all.push_back(flow);
    }
    ++flow_id;
  }
  return {{"traceEvents", all}, {"displayTimeUnit", "ms"}, {"otherData", about.is_null() ? json::object() : about}};
}

// ---- the checker ----

std::string check_chrome_trace(const json& trace) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    return "not an object with a traceEvents array";
  const std::set<std::string> known = {"X", "B", "E", "i", "I", "C", "b", "e", "n", "s", "t", "f", "M"};
  std::set<int> named_pids;
  std::set<std::pair<int, int>> named_threads, used_threads;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  std::map<std::tuple<std::string, std::string, std::string>, int> async_open;
  std::map<std::string, std::pair<int, int>> flows;  // id -> (#s, #f)
  std::size_t k = 0;
  for (const json& e : trace["traceEvents"]) {
    const std::string at = "event " + std::to_string(k++);
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) return at + ": no ph";
    const std::string ph = e["ph"];
    if (!known.count(ph)) return at + ": unknown ph '" + ph + "'";
    if (!e.contains("pid") || !e["pid"].is_number_integer()) return at + ": no integer pid";
    const int pid = e["pid"];
    if (ph == "M") {
      if (!e.contains("args") || !e["args"].is_object()) return at + ": metadata without args";
      if (e["name"] == "process_name") named_pids.insert(pid);
      if (e["name"] == "thread_name") named_threads.insert({pid, e.value("tid", 0)});
      continue;
    }
    if (!e.contains("ts") || !e["ts"].is_number()) return at + ": no ts";
    if (!e.contains("name") || !e["name"].is_string()) return at + ": no name";
    const double ts = e["ts"];
    if (ph == "C") {
      if (!e.contains("args") || !e["args"].is_object()) return at + ": counter without args";
      for (const auto& [key, v] : e["args"].items())
        if (!v.is_number()) return at + ": counter " + key + " is not a number";
      continue;
    }
    const int tid = e.value("tid", 0);
    used_threads.insert({pid, tid});
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) return at + ": X without dur >= 0";
      slices[{pid, tid}].push_back({ts, ts + e["dur"].get<double>()});
    } else if (ph == "b" || ph == "e") {
      if (!e.contains("id")) return at + ": async event without id";
      async_open[{e.value("cat", ""), e["id"].dump(), e["name"]}] += ph == "b" ? 1 : -1;
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id")) return at + ": flow without id";
      auto& [starts, finishes] = flows[e["id"].dump()];
      (ph == "s" ? starts : finishes) += 1;
    }
  }
  for (const auto& [pid, tid] : used_threads) {
    if (!named_pids.count(pid)) return "pid " + std::to_string(pid) + " has no process_name";
    if (!named_threads.count({pid, tid}))
      return "pid " + std::to_string(pid) + " tid " + std::to_string(tid) + " has no thread_name";
  }
  for (auto& [thread, s] : slices) {
    // Sorted by start, longest first: each slice must end inside every slice still open around it.
    std::sort(s.begin(), s.end(), [](auto& a, auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> ends;
    for (const auto& [b, e] : s) {
      while (!ends.empty() && ends.back() <= b) ends.pop_back();
      if (!ends.empty() && e > ends.back() + 1e-6)
        return "X events overlap without nesting on pid " + std::to_string(thread.first) + " tid " +
               std::to_string(thread.second) + " at ts " + std::to_string(b);
      ends.push_back(e);
    }
  }
  for (const auto& [key, n] : async_open)
    if (n != 0) return "async events of id " + std::get<1>(key) + " are not balanced";
  for (const auto& [id, n] : flows)
    if (n.first != 1 || n.second != 1) return "flow " + id + " does not have one start and one finish";
  return "";
}

}  // namespace minitorch::trace
