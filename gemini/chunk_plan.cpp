#include "gemini/chunk_plan.h"

#include <stdexcept>
#include <string>

#include "minitorch/not_implemented.h"

namespace minitorch::gemini {

std::int64_t ChunkPlan::waste() const {
  std::int64_t w = 0;
  for (const PlannedChunk& c : chunks) w += c.waste();
  return w;
}

ChunkPlan pack_chunks(std::span<const std::size_t> params, std::span<const std::int64_t> numels, std::int64_t chunk_size,
                      bool keep_gathered, int dp_size) {
  if (chunk_size < 1 || dp_size < 1)
    throw std::invalid_argument("pack_chunks: chunk_size and dp_size must be >= 1, got " + std::to_string(chunk_size) +
                                " and " + std::to_string(dp_size));
  std::vector<bool> seen(numels.size());
  for (std::size_t p : params) {
    if (p >= numels.size() || seen[p])
      throw std::invalid_argument("pack_chunks: parameter index " + std::to_string(p) +
                                  (p >= numels.size() ? " out of range" : " given twice"));
    seen[p] = true;
  }
  // BEGIN SOLUTION L12.3
  ChunkPlan plan;
  for (std::size_t p : params) {
    const std::int64_t n = numels[p];
    if (plan.chunks.empty() || plan.chunks.back().used() + n > plan.chunks.back().size) {
      PlannedChunk c;  // the last chunk is full (closed): a new one, as big as the tensor if it must be
      c.size = n > chunk_size ? (n + dp_size - 1) / dp_size * dp_size : chunk_size;
      c.keep_gathered = keep_gathered;
      plan.chunks.push_back(std::move(c));
    }
    PlannedChunk& last = plan.chunks.back();
    last.slots.push_back({p, last.used(), n});
  }
  return plan;
  // END SOLUTION
}

}  // namespace minitorch::gemini
