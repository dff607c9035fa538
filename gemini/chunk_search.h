#pragma once
/// \file chunk_search.h
/// Gemini's chunk size (Colossal-AI's search_chunk_configuration, docs/design.md §11): the parameters, in the order
/// they are first used, are packed greedily into chunks of one size; the search picks the size that wastes least.
///
///   sizes in order of use: 12, 30, 7, 25, 18; chunks of 40 (a tensor that does not fit closes the chunk)
///   [12 ............]  [30 7 ...]  [25 .....]  [18 ........]     waste 28 + 3 + 15 + 22 = 68 of 160
///
/// Sizes are counted in elements. The search tries chunk sizes from the largest tensor (at least min_chunk_size,
/// rounded up to a multiple of `interval`) to that + search_range, in steps of `interval`, keeps the first with the
/// least waste, and rounds it up to a multiple of the data-parallel size (each rank owns a shard of every chunk).
/// Tensors beyond mean + 3 standard deviations of the sizes are left out of the search (a huge embedding would
/// force huge chunks on everything else; it gets a chunk of its own when packed). A model smaller than
/// min_chunk_size in all is one chunk kept gathered on every rank: plain data parallelism.
#include <cstdint>
#include <span>

namespace minitorch::gemini {

/// 2^20: Colossal-AI gives search_range_m and min_chunk_size_m in units of 2^20 elements ("m").
inline constexpr std::int64_t kMega = std::int64_t{1} << 20;

struct ChunkSearchOptions {
  double search_range_m = 32;    ///< search_range_m: the sizes tried span this × 2^20 elements above the start
  double min_chunk_size_m = 32;  ///< min_chunk_size_m: no chunk smaller; a smaller model is one gathered chunk
  std::int64_t interval = 1024;  ///< hidden_dim (1024 when unset): the step between the sizes tried
  bool filter_large = true;      ///< leave tensors beyond mean + 3σ out of the search
};

struct ChunkSearchResult {
  std::int64_t chunk_size = 0;  ///< elements per chunk (a multiple of the data-parallel size unless kept gathered)
  bool keep_gathered = false;   ///< the model is smaller than min_chunk_size: one chunk, never sharded
  std::int64_t waste = 0;       ///< the chosen size's empty elements over the searched tensors (before the rounding)
  std::int64_t total = 0;       ///< Σ sizes
};

/// Empty elements when `sizes`, in this order, are packed greedily into chunks of `chunk_size` (a tensor that does
/// not fit in the room left opens the next chunk; the last chunk's tail counts too). A tensor bigger than
/// `chunk_size` makes the room negative, as Colossal-AI's count does: the search never tries such a size.
std::int64_t unused_elements(std::span<const std::int64_t> sizes, std::int64_t chunk_size);

/// The search above over `sizes` (elements, in order of first use) for `dp_size` data-parallel ranks. Throws
/// std::invalid_argument for a negative range, an interval < 1, dp_size < 1 or a size < 1.
ChunkSearchResult search_chunk_size(std::span<const std::int64_t> sizes, int dp_size, const ChunkSearchOptions& options);

}  // namespace minitorch::gemini
