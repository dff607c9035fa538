#pragma once
/// \file frames.h
/// Recording frames.json (docs/frames.md): the state of every rank after each phase of a traced run.
///
/// A frame is one event on the rank's event sink (minitorch/events.h): phase "frame", its JSON in
/// `Event::detail` — what this rank holds of the flat parameter space (params, grads, optimizer
/// states: ranges with a state), the allocator's bytes per tag at that moment, and the collective
/// that led there. The ZeRO stages make them (zero/step_frames.h); at the end rank 0 gathers every
/// rank's frames and pairs the k-th frames of all ranks into frame k of the file. Every rank makes
/// the same frames in the same order: the stages run the same schedule everywhere.
///
/// Bytes and ranges agree (docs/frames.md, the tests check it): for each kind,
///   allocator bytes of its tag = element size × (Σ range lengths + `shadowed` elements),
/// where `shadowed` counts elements held twice — a ZeRO-3 unit gathered over the shard that stays
/// allocated beneath it, local gradients over the reduced-gradient shard of stages 2 and 3.
///
/// \code
///   trace::RankHoldings held;
///   held.params.paint(0, 4128, "shard");
///   held.params.paint(0, 16512, "gathered", trace::Overlay::separate_buffer);  // shadowed: 4128
///   trace::record_frame({"forward", "all-gather outer", "every rank now holds ...", collective}, held);
/// \endcode
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "minitorch/events.h"

namespace minitorch::trace {

/// One parameter's place in the flat space.
struct SpaceParam {
  std::string name;
  std::int64_t begin = 0, end = 0;
};
/// One bucket (reduced and gathered as one flat buffer): [begin, end) including its padding.
struct SpaceBucket {
  std::string name;
  std::int64_t begin = 0, end = 0;
  std::vector<SpaceParam> params;
  bool persistent = false;  ///< ZeRO-3: kept whole on every rank (gathered once per step, not per pass)
};
/// The flat parameter space of a run, what every range of frames.json refers to: the buckets end to end.
struct FlatSpace {
  std::int64_t numel = 0;
  std::vector<SpaceBucket> buckets;
  /// Appends a bucket at the end of the space; its params are then added with add_param.
  SpaceBucket& add_bucket(std::string name, std::int64_t numel);
  nlohmann::json to_json() const;
};

/// How a painted range relates to what it covers.
enum class Overlay {
  same_buffer,     ///< the same memory, now in another state (a shard of the gradients reduced in place)
  separate_buffer  ///< a second buffer over the first (a gathered unit over its shard): both count
};

/// What one rank holds of one kind (params, grads or optimizer states): sorted, non-overlapping
/// ranges of the flat space, each with a state (docs/frames.md: whole, shard, gathering, gathered,
/// accumulating, reducing, reduced). A later paint covers what an earlier one painted.
class HeldRanges {
 public:
  void paint(std::int64_t begin, std::int64_t end, std::string_view state, Overlay how = Overlay::same_buffer);
  /// Σ lengths of the ranges, and the elements a separate buffer covers twice.
  std::int64_t held() const;
  std::int64_t shadowed() const { return shadowed_; }
  /// [{"begin", "end", "state"}, ...], adjacent ranges of one state merged.
  nlohmann::json to_json() const;

 private:
  struct Piece {
    std::int64_t begin, end;
    std::string state;
  };
  std::vector<Piece> pieces_;  // sorted, non-overlapping
  std::int64_t shadowed_ = 0;
};

/// Gemini's view of one chunk after the phase (docs/frames.md version 4; the chunks are the flat space's buckets).
struct ChunkHolding {
  std::string unit;   ///< "sharded" | "gathering" | "gathered" | "kept" (kept gathered: whole on every rank)
  std::string shard;  ///< where its shard lives: "device" | "host" | "cached" (host memory, a copy on the device)
  std::vector<std::pair<std::string, int>> tensors;  ///< its tensors per state (gemini/tensor_state.h), non-zero only
};

struct RankHoldings {
  HeldRanges params, grads, optim;
  std::vector<ChunkHolding> chunks;  ///< Gemini only (empty otherwise)
};

/// A chunk moved between host and device (Gemini's auto placement): an instant phase event "gemini_load" or
/// "gemini_evict" (move "load" | "evict"), scope "chunk c: why", bytes the shard's; frames_of gives the moves since
/// a rank's previous frame to its next as `chunk_moves`. Nothing when no sink listens.
void record_chunk_move(std::size_t chunk, std::string_view move, const std::string& why, std::int64_t bytes);

/// The collective that led to a frame (docs/frames.md `collective`): `bucket` -1 for none.
nlohmann::json collective_json(const std::string& op, int bucket, std::int64_t begin, std::int64_t end,
                               std::int64_t elements, std::int64_t bytes, int world_size);

/// What a frame says: its phase (forward | backward | reduce | optimizer_step | gather | init), a
/// short label, a one-sentence caption and the collective (null: compute only).
struct FrameNote {
  std::string phase, label, caption;
  nlohmann::json collective;
};

/// Emits the frame (a phase event "frame", its JSON in detail): the note, `held`, and the
/// allocator's current bytes per tag. Nothing when no sink listens.
void record_frame(const FrameNote& note, const RankHoldings& held);

/// This rank's frames out of its recorded events, in order, each with its step (1-based: the
/// step_begin before it + 1) and micro-step (of the forward or backward before it in that step), and the chunk
/// moves (record_chunk_move) since the frame before it, if any, as `chunk_moves`.
/// Only frames between a step_begin and its step_end count: an evaluation or a save makes none.
std::vector<nlohmann::json> frames_of(const std::vector<events::Event>& events);

/// frames.json (`version` kFramesVersion): `run` (strategy, zero_stage, world_size, dtype, num_parameters,
/// gradient_accumulation_steps, capacity_bytes), `space`, and frame k = the k-th frame of every rank
/// (`per_rank[r]` = frames_of(rank r's events)).
/// Throws std::runtime_error naming the rank and frame when the ranks' frames do not pair up.
nlohmann::json frames_document(const nlohmann::json& run, const FlatSpace& space,
                               const std::vector<std::vector<nlohmann::json>>& per_rank);

}  // namespace minitorch::trace
