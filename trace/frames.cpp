#include "trace/frames.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "minitorch/allocator.h"
#include "trace/frames_reader.h"

namespace minitorch::trace {

using nlohmann::json;

SpaceBucket& FlatSpace::add_bucket(std::string name, std::int64_t n) {
  buckets.push_back({std::move(name), numel, numel + n, {}});
  numel += n;
  return buckets.back();
}

json FlatSpace::to_json() const {
  json bs = json::array();
  for (const SpaceBucket& b : buckets) {
    json ps = json::array();
    for (const SpaceParam& p : b.params) ps.push_back({{"name", p.name}, {"begin", p.begin}, {"end", p.end}});
    bs.push_back({{"name", b.name}, {"begin", b.begin}, {"end", b.end}, {"params", ps}});
    if (b.persistent) bs.back()["persistent"] = true;  // only ZeRO-3's have the key
  }
  return {{"numel", numel}, {"buckets", bs}};
}

// ---- held ranges: paint [begin, end) over what is there ----

void HeldRanges::paint(std::int64_t begin, std::int64_t end, std::string_view state, Overlay how) {
  if (end <= begin) return;
  std::vector<Piece> out;
  out.reserve(pieces_.size() + 2);
  bool placed = false;
  for (Piece& p : pieces_) {
    if (p.end <= begin || p.begin >= end) {  // untouched
      if (!placed && p.begin >= end) {
        out.push_back({begin, end, std::string(state)});
        placed = true;
      }
      out.push_back(std::move(p));
      continue;
    }
    if (how == Overlay::separate_buffer) shadowed_ += std::min(p.end, end) - std::max(p.begin, begin);
    if (p.begin < begin) out.push_back({p.begin, begin, p.state});  // the part before
    if (!placed) {
      out.push_back({begin, end, std::string(state)});
      placed = true;
    }
    if (p.end > end) out.push_back({end, p.end, std::move(p.state)});  // the part after
  }
  if (!placed) out.push_back({begin, end, std::string(state)});
  pieces_ = std::move(out);
}

std::int64_t HeldRanges::held() const {
  std::int64_t n = 0;
  for (const Piece& p : pieces_) n += p.end - p.begin;
  return n;
}

json HeldRanges::to_json() const {
  json out = json::array();
  for (const Piece& p : pieces_) {
    if (!out.empty() && out.back()["end"] == p.begin && out.back()["state"] == p.state) {
      out.back()["end"] = p.end;
      continue;
    }
    out.push_back({{"begin", p.begin}, {"end", p.end}, {"state", p.state}});
  }
  return out;
}

json collective_json(const std::string& op, int bucket, std::int64_t begin, std::int64_t end, std::int64_t elements,
                     std::int64_t bytes, int world_size) {
  json ranks = json::array();
  for (int r = 0; r < world_size; ++r) ranks.push_back(r);
  return {{"op", op}, {"bucket", bucket < 0 ? json(nullptr) : json(bucket)}, {"begin", begin}, {"end", end},
          {"elements", elements}, {"bytes", bytes}, {"ranks", ranks}};
}

// ---- recording: one event per frame ----

void record_frame(const FrameNote& note, const RankHoldings& held) {
  if (!events::enabled()) return;
  const MemoryStats m = memory_stats();
  json memory = json::object();
  for (int t = 0; t < kNumMemTags; ++t) memory[tag_name(static_cast<MemTag>(t))] = m.current_bytes[static_cast<std::size_t>(t)];
  json frame = {{"phase", note.phase},
                      {"label", note.label},
                      {"caption", note.caption},
                      {"collective", note.collective},
                      {"params", held.params.to_json()},
                      {"grads", held.grads.to_json()},
                      {"optim", held.optim.to_json()},
                      {"shadowed", {{"params", held.params.shadowed()}, {"grads", held.grads.shadowed()},
                                    {"optim", held.optim.shadowed()}}},
                      {"memory_bytes", memory}};
  if (!held.chunks.empty()) {
    json chunks = json::array();
    for (const ChunkHolding& c : held.chunks) {
      json tensors = json::object();
      for (const auto& [state, n] : c.tensors) tensors[state] = n;
      chunks.push_back({{"unit", c.unit}, {"shard", c.shard}, {"tensors", tensors}});
    }
    frame["chunks"] = std::move(chunks);
  }
  events::Event e;
  e.category = events::Category::phase;
  e.name = "frame";
  e.scope = note.label;
  e.detail = frame.dump();
  events::emit(std::move(e));
}

void record_chunk_move(std::size_t chunk, std::string_view move, const std::string& why, std::int64_t bytes) {
  if (!events::enabled()) return;
  events::Event e;
  e.category = events::Category::phase;
  e.kind = events::Kind::instant;
  e.name = "gemini_" + std::string(move);
  e.scope = "chunk " + std::to_string(chunk) + ": " + why;
  e.bytes = bytes;
  e.detail = json{{"chunk", chunk}, {"move", move}, {"why", why}}.dump();
  events::emit(std::move(e));
}

std::vector<json> frames_of(const std::vector<events::Event>& evs) {
  std::vector<json> out;
  std::int64_t step = 0, micro = 0;
  bool in_step = false;  // an evaluation or a save between steps makes no frames
  json moves = json::array();  // chunk moves since the last frame
  for (const events::Event& e : evs) {
    if (e.category == events::Category::phase && e.name == "step_begin") {
      step = e.step + 1;
      micro = 0;
      in_step = true;
      moves = json::array();
    } else if (e.category == events::Category::phase && (e.name == "gemini_load" || e.name == "gemini_evict") &&
               in_step && !e.detail.empty()) {
      moves.push_back(json::parse(e.detail));
    } else if (e.category == events::Category::phase && e.name == "step_end") {
      in_step = false;
    } else if (e.category == events::Category::compute && e.kind == events::Kind::begin && e.micro_step >= 0 &&
               (e.name == "forward" || e.name == "backward")) {
      micro = e.micro_step;
    } else if (e.category == events::Category::phase && e.name == "frame" && in_step) {
      json f = json::parse(e.detail);
      f["step"] = step;
      f["micro"] = micro;
      if (!moves.empty()) f["chunk_moves"] = std::exchange(moves, json::array());
      out.push_back(std::move(f));
    }
  }
  return out;
}

// ---- the file: frame k of every rank side by side ----

json frames_document(const json& run, const FlatSpace& space, const std::vector<std::vector<json>>& per_rank) {
  if (per_rank.empty()) throw std::runtime_error("frames: no ranks");
  const std::vector<json>& first = per_rank[0];
  for (std::size_t r = 1; r < per_rank.size(); ++r) {
    if (per_rank[r].size() != first.size())
      throw std::runtime_error("frames: rank " + std::to_string(r) + " recorded " + std::to_string(per_rank[r].size()) +
                               " frames, rank 0 " + std::to_string(first.size()) + ": the ranks ran different schedules");
    for (std::size_t k = 0; k < first.size(); ++k)
      if (per_rank[r][k]["label"] != first[k]["label"] || per_rank[r][k]["step"] != first[k]["step"])
        throw std::runtime_error("frames: frame " + std::to_string(k) + " is '" + first[k]["label"].get<std::string>() +
                                 "' on rank 0 but '" + per_rank[r][k]["label"].get<std::string>() + "' on rank " +
                                 std::to_string(r));
  }
  json frames = json::array();
  for (std::size_t k = 0; k < first.size(); ++k) {
    const json& f = first[k];
    json ranks = json::array();
    for (std::size_t r = 0; r < per_rank.size(); ++r) {
      const json& mine = per_rank[r][k];
      ranks.push_back({{"rank", r}, {"params", mine["params"]}, {"grads", mine["grads"]}, {"optim", mine["optim"]},
                       {"shadowed", mine["shadowed"]}, {"memory_bytes", mine["memory_bytes"]}});
      for (const char* gemini : {"chunks", "chunk_moves"})  // version 4, Gemini's runs only
        if (mine.contains(gemini)) ranks.back()[gemini] = mine[gemini];
    }
    frames.push_back({{"index", k}, {"step", f["step"]}, {"micro", f["micro"]}, {"phase", f["phase"]},
                      {"label", f["label"]}, {"caption", f["caption"]}, {"collective", f["collective"]},
                      {"ranks", ranks}});
  }
  return {{"format", "minitorch-frames-1"}, {"version", kFramesVersion}, {"run", run}, {"space", space.to_json()},
          {"frames", frames}};
}

}  // namespace minitorch::trace
