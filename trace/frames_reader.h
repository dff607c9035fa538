#pragma once
/// \file frames_reader.h
/// Reading frames.json (docs/frames.md, format "minitorch-frames-1") for the players: the HTML page
/// (trace/html_player.h) and the terminal (trace/terminal_player.h, minitorch-trace). Everything is
/// checked before anything is shown: a malformed file is one error naming the file and the place in
/// it ("frames 'out/frames.json': frames[3].ranks[1].params[0]: state must be one of ...").
/// Keys the players do not know are ignored, so a newer recorder's extra fields do not break them;
/// a file of a newer `version` than kFramesVersion (a schema this build does not know) is refused.
///
/// \code
///   minitorch::trace::FramesDoc doc = minitorch::trace::read_frames_file("out/trace/frames.json");
///   for (const auto& f : doc.frames) std::cout << f.label << "\n";
/// \endcode
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace minitorch::trace {

/// A frames.json that cannot be read or does not follow docs/frames.md.
class FramesError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The schema version this build writes and reads (docs/frames.md `version`; a file without one is 1).
/// 2 added the state "reducing", run.gradient_accumulation_steps and space.buckets[].persistent; 3 the state
/// "staged" (a tile of the optimizer's states in host memory during ZeRO-Infinity's step on NVMe); 4 Gemini's
/// `chunks` and `chunk_moves` per rank.
inline constexpr int kFramesVersion = 4;

/// Gemini's chunk fields (version 4): a chunk's unit, where its shard lives, its tensors' states, a move.
inline const std::vector<std::string>& chunk_units() {
  static const std::vector<std::string> s = {"sharded", "gathering", "gathered", "kept"};
  return s;
}
inline const std::vector<std::string>& chunk_shard_places() {
  static const std::vector<std::string> s = {"device", "cached", "host"};
  return s;
}
inline const std::vector<std::string>& tensor_states() {
  static const std::vector<std::string> s = {"FREE", "COMPUTE", "HOLD", "HOLD_AFTER_BWD", "READY_FOR_REDUCE"};
  return s;
}

/// The states a held range can be in (docs/frames.md), in the order the players list them.
inline const std::vector<std::string>& range_states() {
  static const std::vector<std::string> s = {"whole",        "shard",    "gathering", "gathered",
                                             "accumulating", "reducing", "reduced",   "staged"};
  return s;
}
/// The memory tags in the order the players stack them; a file may carry others after these.
inline const std::vector<std::string>& memory_tags() {
  static const std::vector<std::string> t = {"param", "grad", "optim", "activation", "optim_temp", "comm", "other"};
  return t;
}

struct Range {
  std::int64_t begin = 0, end = 0;  ///< [begin, end) of the flat space
  std::string state;                ///< one of range_states()
  bool operator==(const Range&) const = default;
};

struct Bucket {
  std::string name;
  std::int64_t begin = 0, end = 0;
  bool persistent = false;  ///< ZeRO-3: kept whole on every rank (version 2; false when absent)
  std::int64_t numel() const { return end - begin; }
  /// Rank r's shard [first, second) of this bucket among n ranks (docs/frames.md).
  std::pair<std::int64_t, std::int64_t> shard(int r, int n) const {
    return {begin + r * numel() / n, begin + (r + 1) * numel() / n};
  }
};

struct Collective {
  std::string op;                     ///< all_gather | reduce_scatter | all_reduce | broadcast | send | recv
  std::optional<int> bucket;          ///< index into FramesDoc::buckets, or none
  std::int64_t begin = 0, end = 0;    ///< the flat range it moved
  std::int64_t elements = 0, bytes = 0;  ///< per rank
  std::vector<int> ranks;
};

/// Gemini (version 4): chunk c (= bucket c) as a rank holds it after the frame's phase.
struct ChunkState {
  std::string unit;   ///< one of chunk_units()
  std::string shard;  ///< one of chunk_shard_places()
  std::vector<std::pair<std::string, std::int64_t>> tensors;  ///< per state of tensor_states() present, file order
};
/// Gemini auto (version 4): a shard cached on the device ("load") or dropped from it ("evict"), and why.
struct ChunkMove {
  int chunk = 0;
  std::string move, why;
};

struct RankState {
  int rank = 0;
  std::vector<Range> params, grads, optim;
  std::vector<ChunkState> chunks;   ///< one per bucket in a Gemini run's frames, else empty
  std::vector<ChunkMove> chunk_moves;  ///< the moves since this rank's previous frame
  /// Bytes per allocator tag: memory_tags() first (zero when absent), then any others in file order.
  std::vector<std::pair<std::string, std::int64_t>> memory;
  std::int64_t memory_total() const;
  /// params, grads or optim by name.
  const std::vector<Range>& kind(const std::string& k) const;
};

struct Frame {
  std::int64_t index = 0, step = 0, micro = 0;
  std::string phase, label, caption;
  std::optional<Collective> collective;
  std::vector<RankState> ranks;  ///< sorted by rank, one per rank of the run
};

struct FramesDoc {
  int version = 1;  ///< the file's schema version (1 when it has none)
  std::string strategy, dtype;
  int zero_stage = 0, world_size = 1;
  std::int64_t num_parameters = 0;
  std::int64_t accumulation = 0;  ///< run.gradient_accumulation_steps (G); 0 when the file does not say
  std::optional<std::int64_t> capacity_bytes;
  /// run.pools: where each state lives, "device", "host" (ZeRO-Offload's optimizer, offload_param's shards) or
  /// "disk" (the optimizer on NVMe).
  std::string params_pool = "device", optim_pool = "device";
  std::int64_t numel = 0;  ///< the flat space: Ψ + padding
  std::vector<Bucket> buckets;
  std::vector<Frame> frames;
  /// The bucket holding flat element x, or -1.
  int bucket_of(std::int64_t x) const;
  /// The rank whose shard of its bucket holds flat element x (-1 outside every bucket).
  int owner_of(std::int64_t x) const;
  /// The bytes per rank of the collectives of frame i's step, from its first frame through frame i:
  /// the running total both players show.
  std::int64_t step_bytes_through(std::size_t i) const;
};

/// Checks `j` against docs/frames.md and returns it as a FramesDoc; `what` names the file in errors.
FramesDoc parse_frames(const nlohmann::json& j, const std::string& what);
/// parse_json_bounded(text) then parse_frames; malformed JSON is a FramesError too.
FramesDoc parse_frames_text(const std::string& text, const std::string& what);
/// Reads `path` (at most 1 GiB). A missing or unreadable file is a FramesError naming it.
std::string read_frames_text(const std::string& path);
/// read_frames_text + parse_frames_text, errors naming `path`.
FramesDoc read_frames_file(const std::string& path);

}  // namespace minitorch::trace
