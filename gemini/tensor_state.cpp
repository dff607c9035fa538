#include "gemini/tensor_state.h"

#include <array>
#include <utility>

#include "minitorch/not_implemented.h"

namespace minitorch::gemini {

namespace {

using S = TensorState;
// The nine legal (from, to) pairs: Colossal-AI's STATE_TRANS.
constexpr std::array<std::pair<S, S>, 9> kLegal = {{
    {S::free, S::hold},
    {S::free, S::compute},
    {S::hold, S::free},
    {S::hold, S::compute},
    {S::compute, S::hold},
    {S::compute, S::hold_after_bwd},
    {S::hold_after_bwd, S::compute},
    {S::hold_after_bwd, S::ready_for_reduce},
    {S::ready_for_reduce, S::hold},
}};

std::string legal_from(S from) {  // "HOLD, COMPUTE": where `from` may go
  std::string out;
  for (const auto& [a, b] : kLegal)
    if (a == from) out += (out.empty() ? "" : ", ") + std::string(state_name(b));
  return out;
}

}  // namespace

const char* state_name(TensorState s) {
  switch (s) {
    case S::free: return "FREE";
    case S::compute: return "COMPUTE";
    case S::hold: return "HOLD";
    case S::hold_after_bwd: return "HOLD_AFTER_BWD";
    case S::ready_for_reduce: return "READY_FOR_REDUCE";
  }
  return "?";
}

bool legal_transition(TensorState from, TensorState to) {
  // BEGIN SOLUTION L12.1
  for (const auto& [a, b] : kLegal)
    if (a == from && b == to) return true;
  return false;
  // END SOLUTION
}

IllegalTransition::IllegalTransition(const std::string& tensor, TensorState from, TensorState to)
    : std::logic_error("tensor '" + tensor + "': " + state_name(from) + " -> " + state_name(to) +
                       " is not a Gemini transition (from " + state_name(from) + " a tensor goes to " + legal_from(from) +
                       "; gemini/tensor_state.h)") {}

TensorState transition(const std::string& tensor, TensorState from, TensorState to) {
  if (!legal_transition(from, to)) throw IllegalTransition(tensor, from, to);
  return to;
}

}  // namespace minitorch::gemini
