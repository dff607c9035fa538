#pragma once
/// \file layout.h
/// Where Gemini puts every parameter before anything is allocated (docs/design.md §11): the order of use, the
/// chunk size (Colossal-AI's search, or `chunk_config_dict`), the chunks packed in that order, and the static
/// placement of each chunk. Pure arithmetic on names and sizes: the strategy (gemini/gemini.h), the report and the
/// lesson read the same layout.
///
///   order of use   wte wpe ln_f.w ln_f.b | h.0.ln_1.w ... h.0.mlp.c_proj.b | h.1 ...
///   chunks         [ chunk 0 ........ ] [ chunk 1 ........ ] [ chunk 2 ... ]   (chunk_size elements each)
///   static         first (1 − shard_param_frac) of the chunk memory: kept gathered on every rank;
///                  of the rest, what lies beyond (1 − offload_param_frac) of the memory: shard in host memory
///
/// The outer tensors (the embeddings, the final LayerNorm; the head reuses wte) come first: the model's own hooks
/// use them for the whole forward and backward, as ZeRO-3's outer unit, so they share the first chunks rather than
/// pin the last one gathered through the whole forward.
#include <cstdint>
#include <vector>

#include "gemini/chunk_plan.h"
#include "gemini/chunk_search.h"
#include "gemini/config.h"
#include "nn/module.h"

namespace minitorch::gemini {

struct GeminiLayout {
  std::vector<std::size_t> order;    ///< the parameters (indices into named_parameters()) in order of use
  ChunkSearchResult search;          ///< the chunk size chosen, its waste (from chunk_config_dict: `from_dict`)
  bool from_dict = false;            ///< chunk_config_dict gave the size
  ChunkPlan chunks;                  ///< the packing: per chunk its slots, in order of use
  /// Per chunk: kept gathered on every rank (the search's small model, chunk_config_dict, or shard_param_frac).
  std::vector<bool> keep_gathered;
  /// Per chunk: its parameter shard lives in host memory between uses (offload_param_frac; with `auto` every sharded
  /// chunk's shard, which the device then caches).
  std::vector<bool> param_on_host;
  bool optim_on_host = false;        ///< offload_optim_frac 1.0, or `auto`: every chunk's optimizer states on the host
  /// Per chunk: the elements allocated, a multiple of the data-parallel size (a kept-gathered chunk's size is
  /// rounded up to one: minitorch reduce-scatters its gradients too).
  std::vector<std::int64_t> allocated;

  std::size_t size() const { return chunks.chunks.size(); }
  std::size_t sharded() const;  ///< chunks not kept gathered
  std::size_t on_host() const;  ///< chunks whose shard lives in host memory
};

/// Per chunk, its parameters (indices into named_parameters()) in slot order: the buckets of the chunks' Partition.
std::vector<std::vector<std::size_t>> chunk_members(const GeminiLayout& layout);

/// The order of use of a GPT's named_parameters(): the outer tensors first, then block by block.
std::vector<std::size_t> gemini_use_order(const nn::NamedTensors& params);

/// The layout for `params` (a GPT's named_parameters()) on `dp_size` data-parallel ranks. Throws
/// std::invalid_argument for dp_size < 1 or a chunk_config_dict without an entry for dp_size.
GeminiLayout plan_gemini(const nn::NamedTensors& params, int dp_size, const GeminiConfig& config);

}  // namespace minitorch::gemini
