#include "gemini/chunk_states.h"

#include <stdexcept>

#include "minitorch/not_implemented.h"

namespace minitorch::gemini {

ChunkStates::ChunkStates(const PlannedChunk& chunk, const std::vector<std::string>& names)
    : keep_gathered_(chunk.keep_gathered) {
  for (const ChunkSlot& slot : chunk.slots) {
    if (slot.param >= names.size())
      throw std::invalid_argument("ChunkStates: parameter " + std::to_string(slot.param) + " has no name (" +
                                  std::to_string(names.size()) + " given)");
    names_.push_back(names[slot.param]);
  }
  states_.assign(names_.size(), TensorState::hold);  // placed: its values are valid, nobody computes with it
  counts_[static_cast<std::size_t>(TensorState::hold)] = states_.size();
}

void ChunkStates::set(std::size_t slot, TensorState to) {
  // BEGIN SOLUTION L12.1
  TensorState& s = states_.at(slot);
  transition(names_[slot], s, to);  // throws for an illegal one, naming the tensor, before anything changes
  --counts_[static_cast<std::size_t>(s)];
  ++counts_[static_cast<std::size_t>(to)];
  s = to;
  // END SOLUTION
}

void ChunkStates::set_all(TensorState from, TensorState to) {
  for (std::size_t k = 0; k < states_.size(); ++k)
    if (states_[k] == from) set(k, to);
}

bool ChunkStates::can_release() const {
  // BEGIN SOLUTION L12.1
  return !keep_gathered_ && count(TensorState::hold) + count(TensorState::hold_after_bwd) == size();
  // END SOLUTION
}

}  // namespace minitorch::gemini
