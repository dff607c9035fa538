#pragma once
/// \file chunk_states.h
/// The states of one chunk's tensors, and what they allow the chunk (Colossal-AI's Chunk bookkeeping, docs/design.md
/// §11). A tensor placed in a chunk is HOLD; the hooks move each along gemini/tensor_state.h's transitions; the
/// chunk counts how many are in each state, which answers the manager's two questions in O(1):
///
///   can_release   every tensor HOLD or HOLD_AFTER_BWD: nobody computes with it, the gathered chunk may go back to
///                 its shard (never for a chunk kept gathered)
///   can_reduce    every tensor READY_FOR_REDUCE: the chunk's gradients are final, reduce-scatter them
///
/// \code
///   ChunkStates c(plan.chunks[0], names, /*keep_gathered=*/false);   // all HOLD
///   c.set(0, TensorState::compute);                                   // forward uses tensor 0
///   c.can_release();                                                  // false while it computes
/// \endcode
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "gemini/chunk_plan.h"
#include "gemini/tensor_state.h"

namespace minitorch::gemini {

class ChunkStates {
 public:
  /// The tensors of `chunk`, named `names[slot.param]` (for the errors), all HOLD.
  ChunkStates(const PlannedChunk& chunk, const std::vector<std::string>& names);

  /// Tensor `slot` (its index in the chunk) to `to`; throws IllegalTransition naming it and both states.
  void set(std::size_t slot, TensorState to);
  /// Every tensor now in `from` to `to` (e.g. after the reduce-scatter: READY_FOR_REDUCE → HOLD).
  void set_all(TensorState from, TensorState to);

  TensorState state(std::size_t slot) const { return states_.at(slot); }
  std::size_t size() const { return states_.size(); }
  /// How many tensors are in `s`.
  std::size_t count(TensorState s) const { return counts_[static_cast<std::size_t>(s)]; }
  bool can_release() const;
  bool can_reduce() const { return count(TensorState::ready_for_reduce) == size(); }

 private:
  std::vector<std::string> names_;  ///< per slot
  std::vector<TensorState> states_;
  std::array<std::size_t, 5> counts_{};
  bool keep_gathered_ = false;
};

}  // namespace minitorch::gemini
