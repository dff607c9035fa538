#pragma once
/// \file tensor_state.h
/// Gemini's per-tensor state machine (Colossal-AI's chunk.py, docs/design.md §11): every parameter in a chunk is in
/// one of five states, and the module hooks move it along these nine transitions:
///
///   FREE             → HOLD (values placed), COMPUTE
///   HOLD             → COMPUTE (an operator is about to use it), FREE (values dropped)
///   COMPUTE          → HOLD (its forward is done), HOLD_AFTER_BWD (its backward is done)
///   HOLD_AFTER_BWD   → COMPUTE (used again in this backward: a recompute, a shared weight),
///                      READY_FOR_REDUCE (its gradient is final)
///   READY_FOR_REDUCE → HOLD (its chunk's gradients reduced)
///
/// HOLD: its values are valid, nobody computes with it (a chunk whose tensors all HOLD may be released or moved);
/// COMPUTE: an operator uses it now (its chunk must be gathered on the device); HOLD_AFTER_BWD: its backward is done,
/// its gradient not yet final for the step; READY_FOR_REDUCE: its gradient is final (a chunk whose tensors all are
/// may be reduce-scattered); FREE: no storage (a chunk being built, or released values).
///
/// Colossal-AI ignores a transition outside this table (its gradient hook may run before or after post-backward);
/// here the hooks run in one order, so an illegal transition is a bug, and it is an error naming the tensor and
/// both states.
#include <stdexcept>
#include <string>

namespace minitorch::gemini {

enum class TensorState { free, compute, hold, hold_after_bwd, ready_for_reduce };

/// "FREE", "COMPUTE", "HOLD", "HOLD_AFTER_BWD", "READY_FOR_REDUCE": Colossal-AI's names.
const char* state_name(TensorState s);

/// Whether `from` → `to` is one of the nine transitions above.
bool legal_transition(TensorState from, TensorState to);

/// An illegal transition: "tensor 'h.0.attn.c_attn.weight': HOLD_AFTER_BWD -> FREE is not a Gemini transition ...".
class IllegalTransition : public std::logic_error {
 public:
  IllegalTransition(const std::string& tensor, TensorState from, TensorState to);
};

/// The next state of `tensor`: `to` if legal, else throws IllegalTransition.
TensorState transition(const std::string& tensor, TensorState from, TensorState to);

}  // namespace minitorch::gemini
