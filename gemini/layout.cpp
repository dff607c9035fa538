#include "gemini/layout.h"

#include <stdexcept>
#include <string>

#include "nn/parameter_names.h"

namespace minitorch::gemini {

std::size_t GeminiLayout::sharded() const {
  std::size_t n = 0;
  for (bool kept : keep_gathered) n += kept ? 0 : 1;
  return n;
}

std::size_t GeminiLayout::on_host() const {
  std::size_t n = 0;
  for (bool host : param_on_host) n += host ? 1 : 0;
  return n;
}

std::vector<std::size_t> gemini_use_order(const nn::NamedTensors& params) {
  std::vector<std::size_t> order, blocks;
  for (std::size_t i = 0; i < params.size(); ++i)
    (nn::parameter_place(params[i].first).part == nn::ModelPart::block ? blocks : order).push_back(i);
  order.insert(order.end(), blocks.begin(), blocks.end());
  return order;
}

GeminiLayout plan_gemini(const nn::NamedTensors& params, int dp_size, const GeminiConfig& config) {
  if (dp_size < 1) throw std::invalid_argument("plan_gemini: dp_size must be >= 1, got " + std::to_string(dp_size));
  GeminiLayout l;
  l.order = gemini_use_order(params);
  std::vector<std::int64_t> numels, sizes;  // per parameter; in order of use
  for (const auto& [name, t] : params) numels.push_back(t.numel());
  for (std::size_t p : l.order) sizes.push_back(numels[p]);
  bool keep_all = false;
  if (!config.chunk_config_dict.empty()) {
    const auto it = config.chunk_config_dict.find(dp_size);
    if (it == config.chunk_config_dict.end())
      throw std::invalid_argument("plan_gemini: chunk_config_dict has no entry for data-parallel size " + std::to_string(dp_size));
    l.from_dict = true;
    l.search.chunk_size = it->second.chunk_size;
    l.search.keep_gathered = keep_all = it->second.keep_gathered;
    for (std::int64_t n : sizes) l.search.total += n;
    l.search.waste = unused_elements(sizes, l.search.chunk_size);
  } else {
    l.search = search_chunk_size(sizes, dp_size,
                                 {.search_range_m = config.search_range_m, .min_chunk_size_m = config.min_chunk_size_m,
                                  .interval = config.hidden_dim > 0 ? config.hidden_dim : 1024});
    keep_all = l.search.keep_gathered;
  }
  l.chunks = pack_chunks(l.order, numels, l.search.chunk_size, keep_all, dp_size);

  // Static placement, by chunk memory in order of use (Colossal-AI's StaticPlacementPolicy): the first chunks
  // holding at most (1 − shard_param_frac) of it are kept gathered; of the others, those beyond the first
  // (1 − offload_param_frac) of it keep their shard in host memory.
  std::int64_t total = 0;
  for (const PlannedChunk& c : l.chunks.chunks) total += c.size;
  const double keep_gathered_budget = static_cast<double>(total) * (1.0 - config.shard_param_frac);
  const double device_budget = static_cast<double>(total) * (1.0 - config.offload_param_frac);
  std::int64_t kept = 0, so_far = 0;
  bool keeping = true;
  for (const PlannedChunk& c : l.chunks.chunks) {
    keeping = keeping && (keep_all || static_cast<double>(kept + c.size) <= keep_gathered_budget);
    l.keep_gathered.push_back(keep_all || keeping);
    if (keeping) kept += c.size;
    so_far += c.size;
    l.param_on_host.push_back(!l.keep_gathered.back() && static_cast<double>(so_far) > device_budget);
    l.allocated.push_back((c.size + dp_size - 1) / dp_size * dp_size);
  }
  for (std::size_t c = 0; c < l.size(); ++c) l.chunks.chunks[c].keep_gathered = l.keep_gathered[c];
  l.optim_on_host = config.offload_optim_frac >= 1.0;
  if (config.placement_policy == "auto") {
    // auto (Colossal-AI's AutoPlacementPolicy): every sharded chunk's shard and optimizer states start on the host;
    // the manager caches shards on the device as the capacity allows (gemini/gemini.h). The fractions are static's.
    for (std::size_t c = 0; c < l.size(); ++c) l.param_on_host[c] = !l.keep_gathered[c];
    l.optim_on_host = true;
  }
  return l;
}

std::vector<std::vector<std::size_t>> chunk_members(const GeminiLayout& layout) {
  std::vector<std::vector<std::size_t>> members;
  for (const PlannedChunk& chunk : layout.chunks.chunks) {
    members.emplace_back();
    for (const ChunkSlot& slot : chunk.slots) members.back().push_back(slot.param);
  }
  return members;
}

}  // namespace minitorch::gemini
