#pragma once
/// \file config.h
/// What a Gemini run is built from: the `gemini` section of the config, with Colossal-AI's GeminiPlugin names and
/// defaults (docs/config.md). Plain data; the runtime reads and checks it (runtime/config_sections.cpp).
#include <cstdint>
#include <map>
#include <string>

namespace minitorch::gemini {

/// `chunk_config_dict`'s entry for one data-parallel size: the chunk size instead of the search.
struct ChunkChoice {
  std::int64_t chunk_size = 0;  ///< elements
  bool keep_gathered = false;   ///< never sharded: whole on every rank
};

struct GeminiConfig {
  bool enabled = false;                    ///< a `gemini` section is present
  std::string placement_policy = "static";  ///< "static" or "auto"
  // ---- static placement: shares of the chunks (by elements, in order of use) ----
  double shard_param_frac = 1.0;    ///< sharded over the data-parallel ranks; the rest kept gathered on every rank
  double offload_optim_frac = 0.0;  ///< optimizer states (and the f32 masters) in host memory
  double offload_param_frac = 0.0;  ///< parameter shards in host memory (only when the two above are 1.0)
  // ---- auto placement ----
  double warmup_non_model_data_ratio = 0.8;  ///< the warm-up keeps this share of the device for non-model data
  double steady_cuda_cap_ratio = 0.9;        ///< after it, model data ≤ capacity × this − the non-model peak
  double gpu_margin_mem_ratio = 0.0;         ///< spare device memory given back to optimizer states
  // ---- chunks ----
  double search_range_m = 32;     ///< the chunk-size search's range, × 2^20 elements
  double min_chunk_size_m = 32;   ///< the smallest chunk, × 2^20 elements
  std::int64_t hidden_dim = 0;    ///< the search's step; 0: unset (1024)
  std::map<int, ChunkChoice> chunk_config_dict;  ///< per data-parallel size, instead of the search
  std::int64_t max_prefetch = 0;  ///< chunks gathered ahead of their use
  bool enable_gradient_accumulation = false;
};

}  // namespace minitorch::gemini
