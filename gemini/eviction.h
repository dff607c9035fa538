#pragma once
/// \file eviction.h
/// Which chunk leaves the device when another must come (docs/design.md §11). Gemini's warm-up iteration records
/// the order in which chunks are used; every later iteration uses them in the same order, so the manager knows the
/// future and can evict by Belady's optimal rule (OPT): the resident chunk whose next use is farthest away — one
/// never used again first. LRU (the least recently used) is what a manager without the record could do.
///
///   uses:      1 2 3 4 1 2 5 1 2 3 4 5     room for 3 chunks
///   OPT loads  1 2 3 4 . . 5 . . 3 4 .     7 loads (at 4: evict 3, used again at step 9, the farthest)
///   LRU loads  1 2 3 4 1 2 5 . . 3 4 5    10 loads
///
/// \code
///   UseSchedule s({1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5});
///   Replay opt = replay(s, /*room=*/3, Eviction::opt);   // opt.loads == 7
/// \endcode
#include <cstddef>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace minitorch::gemini {

/// One iteration's chunk uses in order (use k touches chunk uses[k]). The lookups scan: a schedule is one iteration
/// of a few hundred uses, and an eviction is rarer than a use.
class UseSchedule {
 public:
  static constexpr std::size_t kNever = std::numeric_limits<std::size_t>::max();
  explicit UseSchedule(std::vector<std::size_t> uses) : uses_(std::move(uses)) {}
  const std::vector<std::size_t>& uses() const { return uses_; }
  /// The first position after `at` where `chunk` is used; kNever if it is not used again in the iteration.
  std::size_t next_use(std::size_t chunk, std::size_t at) const;

 private:
  std::vector<std::size_t> uses_;
};

enum class Eviction { opt, lru };

/// The resident chunk to evict at position `at` (about to use uses()[at], which is not resident): by OPT the one
/// whose next use after `at` is farthest (never: farthest of all; ties to the lowest chunk id). `resident`: the
/// chunks on the device that may move (not empty; std::invalid_argument otherwise).
std::size_t evict_opt(const UseSchedule& schedule, std::size_t at, std::span<const std::size_t> resident);
/// By LRU: the one whose last use before `at` is earliest (never used yet: first of all; ties to the lowest id).
std::size_t evict_lru(const UseSchedule& schedule, std::size_t at, std::span<const std::size_t> resident);

/// What one iteration costs with room for `room` chunks on the device, starting empty.
struct Replay {
  std::size_t loads = 0;                 ///< chunks brought to the device (h2d moves)
  std::vector<std::size_t> evicted;      ///< the chunk evicted at each eviction, in order
  std::vector<std::size_t> loaded_at;    ///< the positions whose use had to load its chunk
};
/// Plays the schedule: each use whose chunk is not resident loads it, first evicting one by `policy` when the
/// device holds `room` chunks already. Throws std::invalid_argument for room 0.
Replay replay(const UseSchedule& schedule, std::size_t room, Eviction policy);

}  // namespace minitorch::gemini
