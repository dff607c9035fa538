#pragma once
/// \file chunk_plan.h
/// Which parameter goes into which chunk, where (Colossal-AI's ChunkManager.register_tensor, docs/design.md §11):
/// the parameters in the order they are first used, each appended to the last chunk if it fits, else into a new
/// chunk of chunk_size elements — or, for a tensor bigger than that, a chunk of its own size rounded up to a
/// multiple of the data-parallel size. Nothing is allocated: the plan is what the chunk manager, the estimator
/// and the lesson read.
///
///   chunk 0: | wte 8064 | wpe 8192 | h.0.ln_1.weight 128 | ... ·· |   chunk 1: | h.0.attn.c_attn.weight 49152 | ...
///              offset 0   8064       16256                             each chunk: N equal shards, rank r owns shard r
#include <cstdint>
#include <span>
#include <vector>

namespace minitorch::gemini {

/// One tensor's place: `param` (its index in the caller's list), [offset, offset + numel) in its chunk.
struct ChunkSlot {
  std::size_t param = 0;
  std::int64_t offset = 0, numel = 0;
};

struct PlannedChunk {
  std::int64_t size = 0;       ///< elements (a multiple of the data-parallel size unless kept gathered)
  bool keep_gathered = false;  ///< never sharded: whole on every rank
  std::vector<ChunkSlot> slots;
  std::int64_t used() const { return slots.empty() ? 0 : slots.back().offset + slots.back().numel; }
  std::int64_t waste() const { return size - used(); }
};

struct ChunkPlan {
  std::vector<PlannedChunk> chunks;
  std::int64_t waste() const;  ///< Σ the chunks' empty tails
};

/// Packs `params` (indices into `numels`, in order of first use; each index once) into chunks of `chunk_size`
/// elements for `dp_size` ranks, as above. `keep_gathered`: the chunks are never sharded. Throws
/// std::invalid_argument for chunk_size < 1, dp_size < 1, an index out of range or repeated.
ChunkPlan pack_chunks(std::span<const std::size_t> params, std::span<const std::int64_t> numels, std::int64_t chunk_size,
                      bool keep_gathered, int dp_size);

}  // namespace minitorch::gemini
