/// \file frames_reader.cpp
#include "trace/frames_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "minitorch/json_limits.h"

namespace minitorch::trace {

using nlohmann::json;

namespace {

/// Checks one JSON document with a path for the error messages ("frames[3].ranks[1]").
class Checker {
 public:
  explicit Checker(std::string what) : what_(std::move(what)) {}

  [[noreturn]] void fail(const std::string& at, const std::string& message) const {
    throw FramesError("frames '" + what_ + "': " + (at.empty() ? "" : at + ": ") + message);
  }

  const json& member(const json& obj, const std::string& at, const char* key) const {
    if (!obj.is_object()) fail(at, "expected an object, got " + json_excerpt(obj));
    auto it = obj.find(key);
    if (it == obj.end()) fail(at, std::string("missing key '") + key + "'");
    return *it;
  }
  /// obj[key] if present and not null, else nullptr.
  const json* optional(const json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  std::int64_t integer(const json& v, const std::string& at, std::int64_t min = 0,
                       std::int64_t max = std::numeric_limits<std::int64_t>::max()) const {
    if (!v.is_number_integer()) fail(at, "expected an integer, got " + json_excerpt(v));
    const bool too_big = v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max);
    if (too_big || v.get<std::int64_t>() < min || v.get<std::int64_t>() > max)
      fail(at, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + json_excerpt(v));
    const std::int64_t x = v.get<std::int64_t>();
    return x;
  }
  std::int64_t integer_at(const json& obj, const std::string& at, const char* key, std::int64_t min = 0,
                          std::int64_t max = std::numeric_limits<std::int64_t>::max()) const {
    return integer(member(obj, at, key), at + "." + key, min, max);
  }
  std::string text(const json& v, const std::string& at) const {
    if (!v.is_string()) fail(at, "expected a string, got " + json_excerpt(v));
    return v.get<std::string>();
  }
  std::string text_or(const json& obj, const std::string& at, const char* key, const std::string& fallback) const {
    const json* v = optional(obj, key);
    return v ? text(*v, at + "." + key) : fallback;
  }
  const json& array(const json& obj, const std::string& at, const char* key) const {
    const json& v = member(obj, at, key);
    if (!v.is_array()) fail(at + "." + key, "expected an array, got " + json_excerpt(v));
    return v;
  }

 private:
  std::string what_;
};

std::string at_index(const std::string& at, std::size_t i) { return at + "[" + std::to_string(i) + "]"; }

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : ", ") + w;
  return s;
}

std::string one_of(const Checker& c, const json& v, const std::string& at, const std::vector<std::string>& allowed) {
  std::string word = c.text(v, at);
  if (std::find(allowed.begin(), allowed.end(), word) == allowed.end())
    c.fail(at, "must be one of " + joined(allowed) + "; got \"" + truncate_for_message(word) + "\"");
  return word;
}

/// Gemini's keys of one rank's entry (version 4): `chunks` (one per bucket) and `chunk_moves`.
void parse_chunks(const Checker& c, const json& rank, const std::string& ra, const FramesDoc& d, RankState& rs) {
  if (const json* chunks = c.optional(rank, "chunks")) {
    const std::string at = ra + ".chunks";
    if (!chunks->is_array()) c.fail(at, "expected an array, got " + json_excerpt(*chunks));
    if (chunks->size() != d.buckets.size())
      c.fail(at, "expected one entry per bucket (" + std::to_string(d.buckets.size()) + "), got " +
                     std::to_string(chunks->size()));
    for (std::size_t q = 0; q < chunks->size(); ++q) {
      const std::string qa = at_index(at, q);
      const json& cj = (*chunks)[q];
      ChunkState cs;
      cs.unit = one_of(c, c.member(cj, qa, "unit"), qa + ".unit", chunk_units());
      cs.shard = one_of(c, c.member(cj, qa, "shard"), qa + ".shard", chunk_shard_places());
      const json& tensors = c.member(cj, qa, "tensors");
      if (!tensors.is_object()) c.fail(qa + ".tensors", "expected an object, got " + json_excerpt(tensors));
      for (auto it = tensors.begin(); it != tensors.end(); ++it) {
        const std::string ta = qa + ".tensors." + truncate_for_message(it.key(), 40);
        one_of(c, json(it.key()), ta, tensor_states());
        cs.tensors.emplace_back(it.key(), c.integer(it.value(), ta, 1));
      }
      rs.chunks.push_back(std::move(cs));
    }
  }
  if (const json* moves = c.optional(rank, "chunk_moves")) {
    const std::string at = ra + ".chunk_moves";
    if (!moves->is_array()) c.fail(at, "expected an array, got " + json_excerpt(*moves));
    for (std::size_t q = 0; q < moves->size(); ++q) {
      const std::string qa = at_index(at, q);
      ChunkMove m;
      m.chunk = static_cast<int>(c.integer_at((*moves)[q], qa, "chunk", 0, static_cast<std::int64_t>(d.buckets.size()) - 1));
      m.move = one_of(c, c.member((*moves)[q], qa, "move"), qa + ".move", {"load", "evict"});
      m.why = c.text_or((*moves)[q], qa, "why", "");
      rs.chunk_moves.push_back(std::move(m));
    }
  }
}

}  // namespace

std::int64_t RankState::memory_total() const {
  std::int64_t s = 0;
  for (const auto& [tag, bytes] : memory) s += bytes;
  return s;
}

const std::vector<Range>& RankState::kind(const std::string& k) const {
  if (k == "params") return params;
  if (k == "grads") return grads;
  if (k == "optim") return optim;
  throw std::invalid_argument("RankState::kind: '" + k + "' is not params, grads or optim");
}

int FramesDoc::bucket_of(std::int64_t x) const {
  for (std::size_t b = 0; b < buckets.size(); ++b)
    if (x >= buckets[b].begin && x < buckets[b].end) return static_cast<int>(b);
  return -1;
}

int FramesDoc::owner_of(std::int64_t x) const {
  const int b = bucket_of(x);
  if (b < 0) return -1;
  const Bucket& bk = buckets[static_cast<std::size_t>(b)];
  for (int r = 0; r < world_size; ++r)
    if (x < bk.shard(r, world_size).second) return r;
  return world_size - 1;
}

std::int64_t FramesDoc::step_bytes_through(std::size_t i) const {
  std::int64_t sum = 0;
  for (std::size_t k = i + 1; k-- > 0 && frames.at(k).step == frames.at(i).step;)  // back to the step's first frame
    if (frames[k].collective) sum += frames[k].collective->bytes;
  return sum;
}

FramesDoc parse_frames(const json& j, const std::string& what) {
  const Checker c(what);
  FramesDoc d;
  const json& format = c.member(j, "", "format");
  if (!format.is_string() || format.get<std::string>() != "minitorch-frames-1")
    c.fail("format", "expected \"minitorch-frames-1\", got " + json_excerpt(format));
  // A newer schema may mean something this build cannot show right: refuse it, saying what to do.
  if (const json* v = c.optional(j, "version")) {
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(kFramesVersion))
      c.fail("version", json_excerpt(*v) + " is newer than this minitorch reads (versions 1 to " +
                            std::to_string(kFramesVersion) + "): play it with the minitorch that recorded it, or "
                            "record it again with this one");
    if (!v->is_number_integer() || v->get<std::int64_t>() < 1)
      c.fail("version", "expected a positive integer, got " + json_excerpt(*v));
    d.version = static_cast<int>(v->get<std::int64_t>());
  }

  const json& run = c.member(j, "", "run");
  constexpr int kMaxRanks = 4096;
  d.world_size = static_cast<int>(c.integer_at(run, "run", "world_size", 1, kMaxRanks));
  d.strategy = c.text_or(run, "run", "strategy", "");
  d.dtype = c.text_or(run, "run", "dtype", "");
  if (const json* v = c.optional(run, "zero_stage")) d.zero_stage = static_cast<int>(c.integer(*v, "run.zero_stage", 0, 3));
  if (const json* v = c.optional(run, "capacity_bytes")) d.capacity_bytes = c.integer(*v, "run.capacity_bytes", 1);
  if (const json* pools = c.optional(run, "pools"))
    for (auto [key, into] : {std::pair{"params", &d.params_pool}, std::pair{"optim", &d.optim_pool}})
      if (const json* where = c.optional(*pools, key)) {
        const std::string at = std::string("run.pools.") + key;
        *into = c.text(*where, at);
        if (*into != "device" && *into != "host" && *into != "disk")
          c.fail(at, "expected \"device\", \"host\" or \"disk\", got " + json_excerpt(*where));
      }
  if (const json* v = c.optional(run, "gradient_accumulation_steps"))
    d.accumulation = c.integer(*v, "run.gradient_accumulation_steps", 1);

  const json& space = c.member(j, "", "space");
  d.numel = c.integer_at(space, "space", "numel", 1);
  d.num_parameters = d.numel;
  if (const json* v = c.optional(run, "num_parameters")) d.num_parameters = c.integer(*v, "run.num_parameters", 0, d.numel);
  const json& buckets = c.array(space, "space", "buckets");
  if (buckets.empty()) c.fail("space.buckets", "expected at least one bucket");
  std::int64_t last_end = 0;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const std::string at = at_index("space.buckets", b);
    Bucket bk;
    bk.begin = c.integer_at(buckets[b], at, "begin", 0, d.numel);
    bk.end = c.integer_at(buckets[b], at, "end", 0, d.numel);
    bk.name = c.text_or(buckets[b], at, "name", "bucket " + std::to_string(b));
    if (const json* v = c.optional(buckets[b], "persistent")) {
      if (!v->is_boolean()) c.fail(at + ".persistent", "expected true or false, got " + json_excerpt(*v));
      bk.persistent = v->get<bool>();
    }
    if (bk.end <= bk.begin) c.fail(at, "end must be greater than begin");
    if (bk.begin < last_end) c.fail(at, "buckets must be in flat order and must not overlap");
    last_end = bk.end;
    d.buckets.push_back(std::move(bk));
  }

  const json& frames = c.array(j, "", "frames");
  if (frames.empty()) c.fail("frames", "expected at least one frame");
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const std::string at = at_index("frames", i);
    const json& fj = frames[i];
    Frame f;
    f.index = c.integer_at(fj, at, "index");
    if (f.index != static_cast<std::int64_t>(i)) c.fail(at + ".index", "expected " + std::to_string(i) + " (frames in order)");
    f.step = c.integer_at(fj, at, "step");
    if (const json* v = c.optional(fj, "micro")) f.micro = c.integer(*v, at + ".micro");
    f.phase = c.text(c.member(fj, at, "phase"), at + ".phase");
    f.label = c.text_or(fj, at, "label", f.phase);
    f.caption = c.text_or(fj, at, "caption", "");
    if (const json* cj = c.optional(fj, "collective")) {
      const std::string ca = at + ".collective";
      Collective col;
      col.op = c.text(c.member(*cj, ca, "op"), ca + ".op");
      static const std::vector<std::string> ops = {"all_gather", "reduce_scatter", "all_reduce", "broadcast", "send", "recv"};
      if (std::find(ops.begin(), ops.end(), col.op) == ops.end())
        c.fail(ca + ".op", "must be one of all_gather, reduce_scatter, all_reduce, broadcast, send, recv; got \"" +
                               truncate_for_message(col.op) + "\"");
      if (const json* v = c.optional(*cj, "bucket"))
        col.bucket = static_cast<int>(c.integer(*v, ca + ".bucket", 0, static_cast<std::int64_t>(d.buckets.size()) - 1));
      col.begin = c.integer_at(*cj, ca, "begin", 0, d.numel);
      col.end = c.integer_at(*cj, ca, "end", col.begin, d.numel);
      col.elements = c.integer_at(*cj, ca, "elements");
      col.bytes = c.integer_at(*cj, ca, "bytes");
      if (const json* v = c.optional(*cj, "ranks")) {
        if (!v->is_array()) c.fail(ca + ".ranks", "expected an array, got " + json_excerpt(*v));
        for (std::size_t k = 0; k < v->size(); ++k)
          col.ranks.push_back(static_cast<int>(c.integer((*v)[k], at_index(ca + ".ranks", k), 0, d.world_size - 1)));
      }
      f.collective = std::move(col);
    }
    const json& ranks = c.array(fj, at, "ranks");
    if (ranks.size() != static_cast<std::size_t>(d.world_size))
      c.fail(at + ".ranks", "expected one entry per rank (" + std::to_string(d.world_size) + "), got " +
                                std::to_string(ranks.size()));
    std::vector<bool> seen(static_cast<std::size_t>(d.world_size), false);
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      const std::string ra = at_index(at + ".ranks", k);
      RankState rs;
      rs.rank = static_cast<int>(c.integer_at(ranks[k], ra, "rank", 0, d.world_size - 1));
      if (seen[static_cast<std::size_t>(rs.rank)]) c.fail(ra + ".rank", "rank " + std::to_string(rs.rank) + " appears twice");
      seen[static_cast<std::size_t>(rs.rank)] = true;
      for (const char* kind : {"params", "grads", "optim"}) {
        const std::string ka = ra + "." + kind;
        std::vector<Range>& out = kind[0] == 'p' ? rs.params : kind[0] == 'g' ? rs.grads : rs.optim;
        const json& list = c.array(ranks[k], ra, kind);
        std::int64_t prev_end = 0;
        for (std::size_t q = 0; q < list.size(); ++q) {
          const std::string qa = at_index(ka, q);
          Range r;
          r.begin = c.integer_at(list[q], qa, "begin", 0, d.numel);
          r.end = c.integer_at(list[q], qa, "end", 0, d.numel);
          r.state = c.text(c.member(list[q], qa, "state"), qa + ".state");
          if (r.end <= r.begin) c.fail(qa, "end must be greater than begin");
          if (r.begin < prev_end) c.fail(qa, "ranges must be sorted and must not overlap");
          const auto& states = range_states();
          if (std::find(states.begin(), states.end(), r.state) == states.end())
            c.fail(qa + ".state", "must be one of " + joined(states) + "; got \"" + truncate_for_message(r.state) + "\"");
          prev_end = r.end;
          out.push_back(std::move(r));
        }
      }
      for (const std::string& tag : memory_tags()) rs.memory.emplace_back(tag, 0);
      if (const json* m = c.optional(ranks[k], "memory_bytes")) {
        if (!m->is_object()) c.fail(ra + ".memory_bytes", "expected an object, got " + json_excerpt(*m));
        for (auto it = m->begin(); it != m->end(); ++it) {
          const std::int64_t bytes = c.integer(it.value(), ra + ".memory_bytes." + truncate_for_message(it.key(), 40));
          auto known = std::find_if(rs.memory.begin(), rs.memory.end(), [&](const auto& p) { return p.first == it.key(); });
          if (known != rs.memory.end()) known->second = bytes;
          else rs.memory.emplace_back(it.key(), bytes);
        }
      }
      parse_chunks(c, ranks[k], ra, d, rs);
      f.ranks.push_back(std::move(rs));
    }
    std::sort(f.ranks.begin(), f.ranks.end(), [](const RankState& a, const RankState& b) { return a.rank < b.rank; });
    d.frames.push_back(std::move(f));
  }
  return d;
}

FramesDoc parse_frames_text(const std::string& text, const std::string& what) {
  json j;
  try {
    j = parse_json_bounded(text, "frames '" + what + "'");
  } catch (const JsonLimitError& e) {
    throw FramesError(e.what());
  } catch (const json::exception& e) {
    throw FramesError("frames '" + what + "': malformed JSON: " + truncate_for_message(e.what(), 300));
  }
  return parse_frames(j, what);
}

std::string read_frames_text(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw FramesError("frames '" + path + "': no such file (minitorch-train --trace DIR writes it)");
  if (fs::is_directory(path, ec)) throw FramesError("frames '" + path + "': is a directory, not a file");
  const auto size = fs::file_size(path, ec);
  constexpr std::uintmax_t kMaxBytes = std::uintmax_t{1} << 30;
  if (!ec && size > kMaxBytes)
    throw FramesError("frames '" + path + "': " + std::to_string(size) + " bytes, more than the 1 GiB the players read");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FramesError("frames '" + path + "': cannot be opened for reading");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw FramesError("frames '" + path + "': read error");
  return s.str();
}

FramesDoc read_frames_file(const std::string& path) { return parse_frames_text(read_frames_text(path), path); }

}  // namespace minitorch::trace
