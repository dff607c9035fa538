/// \file terminal_player.cpp
#include "trace/terminal_player.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

namespace minitorch::trace {

namespace {

constexpr const char* kReset = "\x1b[0m";
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kBold = "\x1b[1m";

/// The owner colours: the HTML page's palette in the terminal's 16 colours.
std::string owner_colour(int r) {
  static const char* const codes[] = {"34", "33", "32", "31", "35", "36", "93", "90"};
  return std::string("\x1b[") + codes[static_cast<std::size_t>(r) % 8] + "m";
}

char state_char(const std::string& s) {
  if (s == "shard") return '#';
  if (s == "whole") return '=';
  if (s == "gathering") return ':';
  if (s == "gathered") return '+';
  if (s == "accumulating") return '~';
  if (s == "reducing") return '%';
  if (s == "reduced") return '*';
  if (s == "staged") return '@';
  return '?';
}

/// The cells of a bar: each [begin, end) lies inside one shard of one bucket.
struct Cell {
  std::size_t bucket;
  std::int64_t begin, end;
  int owner;
};

struct Layout {
  std::vector<std::vector<Cell>> per_bucket;
};

Layout layout(const FramesDoc& doc, int width) {
  Layout l;
  const int n = doc.world_size;
  for (std::size_t b = 0; b < doc.buckets.size(); ++b) {
    const Bucket& bk = doc.buckets[b];
    const double share = static_cast<double>(width) * static_cast<double>(bk.numel()) /
                         static_cast<double>(std::max<std::int64_t>(1, doc.numel)) / n;
    const int per_shard = std::max(1, static_cast<int>(std::lround(share)));
    std::vector<Cell> cells;
    for (int r = 0; r < n; ++r) {
      const auto [s, e] = bk.shard(r, n);
      for (int k = 0; k < per_shard; ++k) {
        const std::int64_t a = s + (e - s) * k / per_shard, z = s + (e - s) * (k + 1) / per_shard;
        if (z > a) cells.push_back({b, a, z, r});
      }
    }
    l.per_bucket.push_back(std::move(cells));
  }
  return l;
}

/// The state covering most of [a, z) in `ranges` (sorted), or "" when most of it is not held.
std::string majority_state(const std::vector<Range>& ranges, std::int64_t a, std::int64_t z) {
  const auto& states = range_states();
  std::vector<std::int64_t> cover(states.size(), 0);
  std::int64_t held = 0;
  for (const Range& r : ranges) {
    if (r.end <= a) continue;
    if (r.begin >= z) break;
    const std::int64_t c = std::min(z, r.end) - std::max(a, r.begin);
    held += c;
    cover[static_cast<std::size_t>(std::find(states.begin(), states.end(), r.state) - states.begin())] += c;
  }
  if (2 * held < z - a || held == 0) return "";
  const auto best = std::max_element(cover.begin(), cover.end()) - cover.begin();
  return states[static_cast<std::size_t>(best)];
}

std::string pad(const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

constexpr std::size_t kPrefix = 16;  // "rank 10 params  "

std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.empty()) return "";
  bool contiguous = true;
  for (std::size_t i = 1; i < ranks.size(); ++i) contiguous = contiguous && ranks[i] == ranks[i - 1] + 1;
  if (contiguous && ranks.size() > 2) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ranks[i]);
  }
  return s;
}

// `s` with its control characters shown as \xNN: a frames file is data, and its text (a caption, a
// bucket's name) must not move the cursor or recolour the terminal with escape sequences of its own.
std::string shown(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}
/// Gemini's chunks of one rank, each in its bucket's cells: unit, where its shard is, what most of its tensors are.
std::string chunk_row(const RankState& rs, const Layout& l) {
  std::string line = pad("       chunks", kPrefix);
  for (std::size_t b = 0; b < l.per_bucket.size() && b < rs.chunks.size(); ++b) {
    const ChunkState& ch = rs.chunks[b];
    char code[3] = {ch.unit == "gathered" ? 'G' : ch.unit == "gathering" ? 'g' : ch.unit == "kept" ? 'K' : '.',
                    ch.shard == "device" ? 'D' : ch.shard == "cached" ? 'c' : 'h', ' '};
    const auto most = std::max_element(ch.tensors.begin(), ch.tensors.end(),
                                       [](const auto& a, const auto& z) { return a.second < z.second; });
    if (most != ch.tensors.end())
      code[2] = most->first == "HOLD_AFTER_BWD" ? 'A' : most->first == "READY_FOR_REDUCE" ? 'R' : most->first[0];
    const std::size_t width = l.per_bucket[b].size();
    line.push_back('|');
    for (std::size_t k = 0; k < width; ++k) line.push_back(k < 3 ? code[k] : ' ');
  }
  return line + "|\n";
}
}  // namespace

std::string format_bytes(std::int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (std::int64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1 << 30));
  else if (bytes >= (std::int64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1 << 20));
  else if (bytes >= (std::int64_t{1} << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1 << 10));
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

std::string render_run_header(const FramesDoc& doc, const TerminalOptions& opt) {
  std::ostringstream o;
  o << (opt.colour ? kBold : "") << (doc.strategy.empty() ? "run" : shown(doc.strategy)) << (opt.colour ? kReset : "") << ", "
    << doc.world_size << (doc.world_size == 1 ? " rank" : " ranks") << ", " << doc.num_parameters << " parameters";
  if (!doc.dtype.empty()) o << " (" << shown(doc.dtype) << ")";
  o << ", " << doc.buckets.size() << (doc.buckets.size() == 1 ? " bucket" : " buckets") << ", " << doc.frames.size()
    << (doc.frames.size() == 1 ? " frame" : " frames");
  if (doc.capacity_bytes) o << ", capacity " << format_bytes(*doc.capacity_bytes) << " per rank";
  o << "\ncells: # own shard  = whole  + gathered  : gathering  ~ local grads  % reducing  * reduced  @ staged  . freed\n";
  if (!doc.frames.empty() && !doc.frames[0].ranks.empty() && !doc.frames[0].ranks[0].chunks.empty())
    o << "chunks (Gemini, a bucket each): unit G gathered g gathering . sharded K kept | shard D on the device c cached "
         "h host | its tensors, most of them: C COMPUTE H HOLD A HOLD_AFTER_BWD R READY_FOR_REDUCE F FREE\n";
  o << "owner: the rank whose shard of the bucket holds the cell";
  if (opt.colour) {
    o << "; colours:";
    for (int r = 0; r < std::min(doc.world_size, 8); ++r) o << " " << owner_colour(r) << kBold << "rank " << r << kReset;
  }
  o << "\n";
  return o.str();
}

std::string render_frame_text(const FramesDoc& doc, std::size_t i, const TerminalOptions& opt) {
  const Frame& f = doc.frames.at(i);
  const Layout l = layout(doc, opt.width);
  const bool c = opt.colour;
  std::ostringstream o;

  // header (with what this rank has sent in the step's collectives so far), label, caption, collective
  std::ostringstream head;
  head << "frame " << i + 1 << "/" << doc.frames.size() << " | step " << f.step << " | micro " << f.micro << " | "
       << shown(f.phase) << " (collectives this step so far: " << doc.step_bytes_through(i) << " B per rank)";
  const std::string h = head.str();
  o << "\n" << (c ? kBold : "") << "=== " << h << " " << std::string(h.size() < 70 ? 70 - h.size() : 3, '=')
    << (c ? kReset : "") << "\n";
  o << (c ? kBold : "") << shown(f.label) << (c ? kReset : "") << "\n";
  if (!f.caption.empty()) o << "  " << shown(f.caption) << "\n";
  if (f.collective) {
    const Collective& col = *f.collective;
    o << "  " << (c ? "\x1b[38;5;166m" : "") << shown(col.op);
    if (col.bucket) o << " bucket " << *col.bucket << " (" << shown(doc.buckets[static_cast<std::size_t>(*col.bucket)].name) << ")";
    // A collective over no range of the flat buffers: the optimizer step's gradient norm (one f32 per rank).
    if (col.begin == col.end) o << " of the gradient norm (one number, not a range of the buffers): ";
    else o << " [" << col.begin << ", " << col.end << "): ";
    o << col.elements << " elements, " << col.bytes << " bytes per rank";
    if (!col.ranks.empty()) o << ", ranks " << ranks_text(col.ranks);
    o << (c ? kReset : "") << "\n";
  }
  o << "\n";

  // bucket names and owners over the cells
  std::string names = pad("", kPrefix), owners = pad("owner", kPrefix);
  for (std::size_t b = 0; b < l.per_bucket.size(); ++b) {
    const auto& cells = l.per_bucket[b];
    std::string name = shown(doc.buckets[b].name).substr(0, cells.size());
    names += '|';
    names += pad(name, cells.size());
    owners += "|";
    for (const Cell& cell : cells) {
      const std::string digit = cell.owner < 10 ? std::to_string(cell.owner) : std::string(1, static_cast<char>('a' + (cell.owner - 10) % 26));
      owners += c ? owner_colour(cell.owner) + digit + kReset : digit;
    }
  }
  o << (c ? kDim : "") << names << "|" << (c ? kReset : "") << "\n";
  o << owners << "|\n";

  for (const RankState& rs : f.ranks) {
    for (const char* kind : {"params", "grads", "optim"}) {
      // where a state lives off the device (run.pools: ZeRO-Offload's host, NVMe's disk), the row says so
      const std::string& pool = kind[0] == 'p' ? doc.params_pool : kind[0] == 'o' ? doc.optim_pool : std::string("device");
      std::string line = kind[0] == 'p'  ? "rank " + std::to_string(rs.rank) + (pool == "device" ? " params" : " " + pool + " p")
                         : pool != "device" ? "  " + pool + " " + std::string(kind)
                                            : "       " + std::string(kind);
      line = pad(line, kPrefix);
      const std::vector<Range>& ranges = rs.kind(kind);
      for (const auto& cells : l.per_bucket) {
        line += "|";
        for (const Cell& cell : cells) {
          const std::string st = majority_state(ranges, cell.begin, cell.end);
          const char ch = st.empty() ? '.' : state_char(st);
          if (!c) line += ch;
          else if (st.empty()) line += std::string(kDim) + ch + kReset;
          else line += (cell.owner == rs.rank ? std::string(kBold) : std::string()) + owner_colour(cell.owner) + ch + kReset;
        }
      }
      o << line << "|\n";
    }
    if (!rs.chunks.empty()) o << chunk_row(rs, l);
    for (const ChunkMove& m : rs.chunk_moves)
      o << pad("       " + m.move, kPrefix) << "chunk " << m.chunk << (m.why.empty() ? "" : ": " + shown(m.why)) << "\n";
    std::string mem = pad("       memory", kPrefix);
    bool any = false;
    for (const auto& [tag, bytes] : rs.memory) {
      if (bytes == 0) continue;
      mem += std::string(any ? ", " : "") + shown(tag) + " " + format_bytes(bytes);
      any = true;
    }
    mem += std::string(any ? " = " : "") + format_bytes(rs.memory_total());
    if (doc.capacity_bytes) {
      char pct[32];
      std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * static_cast<double>(rs.memory_total()) / static_cast<double>(*doc.capacity_bytes));
      mem += std::string(" (") + pct + " of " + format_bytes(*doc.capacity_bytes) + ")";
    }
    o << (c ? kDim : "") << mem << (c ? kReset : "") << "\n";
  }
  return o.str();
}

}  // namespace minitorch::trace
