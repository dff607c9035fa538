#include "gemini/chunk_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace minitorch::gemini {

std::int64_t unused_elements(std::span<const std::int64_t> sizes, std::int64_t chunk_size) {
  std::int64_t closed = 0, room = 0;  // the empty tails of the closed chunks; what the open one has left
  for (std::int64_t s : sizes) {
    if (s > room) {  // does not fit: close the chunk (its room is waste), open a new one
      closed += room;
      room = chunk_size;
    }
    room -= s;
  }
  return closed + room;
}

namespace {

/// `sizes` without those beyond mean + 3σ (population standard deviation), the order kept.
std::vector<std::int64_t> without_outliers(std::span<const std::int64_t> sizes) {
  const auto n = static_cast<double>(sizes.size());
  double mean = 0, var = 0;
  for (std::int64_t s : sizes) mean += static_cast<double>(s) / n;
  for (std::int64_t s : sizes) var += (static_cast<double>(s) - mean) * (static_cast<double>(s) - mean) / n;
  const double limit = mean + 3 * std::sqrt(var);
  std::vector<std::int64_t> kept;
  for (std::int64_t s : sizes)
    if (static_cast<double>(s) <= limit) kept.push_back(s);
  return kept;
}

std::int64_t round_up(std::int64_t x, std::int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

}  // namespace

ChunkSearchResult search_chunk_size(std::span<const std::int64_t> sizes, int dp_size, const ChunkSearchOptions& o) {
  if (o.search_range_m < 0 || o.min_chunk_size_m < 0 || o.interval < 1 || dp_size < 1)
    throw std::invalid_argument("search_chunk_size: search_range_m and min_chunk_size_m must be >= 0, the interval "
                                "and the data-parallel size >= 1");
  for (std::int64_t s : sizes)
    if (s < 1) throw std::invalid_argument("search_chunk_size: a tensor of " + std::to_string(s) + " elements");
  const std::int64_t range = std::llround(o.search_range_m * static_cast<double>(kMega));
  const std::int64_t min_chunk = std::llround(o.min_chunk_size_m * static_cast<double>(kMega));
  ChunkSearchResult r;
  r.total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  if (r.total < min_chunk) {  // small enough to keep whole on every rank, as DDP does
    r.chunk_size = r.total;
    r.keep_gathered = true;
    return r;
  }
  const std::vector<std::int64_t> searched =
      o.filter_large ? without_outliers(sizes) : std::vector<std::int64_t>(sizes.begin(), sizes.end());
  const std::int64_t largest = searched.empty() ? 0 : *std::max_element(searched.begin(), searched.end());
  const std::int64_t start = round_up(std::max(min_chunk, largest), o.interval);
  r.waste = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t size = start; size <= start + range; size += o.interval) {
    const std::int64_t waste = unused_elements(searched, size);
    if (waste < r.waste) r.waste = waste, r.chunk_size = size;  // the first of equal wastes: the smallest size
  }
  r.chunk_size = round_up(r.chunk_size, dp_size);
  return r;
}

}  // namespace minitorch::gemini
