#include "gemini/eviction.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "minitorch/not_implemented.h"

namespace minitorch::gemini {

std::size_t UseSchedule::next_use(std::size_t chunk, std::size_t at) const {
  for (std::size_t k = at + 1; k < uses_.size(); ++k)
    if (uses_[k] == chunk) return k;
  return kNever;
}

namespace {
void need_candidates(std::span<const std::size_t> resident) {
  if (resident.empty()) throw std::invalid_argument("eviction: no resident chunk may move");
}
}  // namespace

std::size_t evict_opt(const UseSchedule& schedule, std::size_t at, std::span<const std::size_t> resident) {
  need_candidates(resident);
  // BEGIN SOLUTION L12.2
  std::size_t victim = resident.front(), farthest = 0;
  bool first = true;
  for (std::size_t c : resident) {
    const std::size_t next = schedule.next_use(c, at);
    if (first || next > farthest || (next == farthest && c < victim)) victim = c, farthest = next, first = false;
  }
  return victim;
  // END SOLUTION
}

std::size_t evict_lru(const UseSchedule& schedule, std::size_t at, std::span<const std::size_t> resident) {
  need_candidates(resident);
  auto last_use = [&](std::size_t c) -> long long {  // -1: not used yet in this iteration
    for (std::size_t k = at; k-- > 0;)
      if (schedule.uses()[k] == c) return static_cast<long long>(k);
    return -1;
  };
  std::size_t victim = resident.front();
  long long earliest = 0;
  bool first = true;
  for (std::size_t c : resident) {
    const long long last = last_use(c);
    if (first || last < earliest || (last == earliest && c < victim)) victim = c, earliest = last, first = false;
  }
  return victim;
}

Replay replay(const UseSchedule& schedule, std::size_t room, Eviction policy) {
  if (room == 0) throw std::invalid_argument("replay: room for 0 chunks: nothing could ever be used");
  Replay r;
  std::vector<std::size_t> resident;
  for (std::size_t at = 0; at < schedule.uses().size(); ++at) {
    const std::size_t chunk = schedule.uses()[at];
    if (std::find(resident.begin(), resident.end(), chunk) != resident.end()) continue;  // already there
    if (resident.size() == room) {
      const std::size_t victim = policy == Eviction::opt ? evict_opt(schedule, at, resident)
                                                         : evict_lru(schedule, at, resident);
      resident.erase(std::find(resident.begin(), resident.end(), victim));
      r.evicted.push_back(victim);
    }
    resident.push_back(chunk);
    ++r.loads;
    r.loaded_at.push_back(at);
  }
  return r;
}

}  // namespace minitorch::gemini
