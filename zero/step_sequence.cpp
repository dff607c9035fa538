#include "zero/step_sequence.h"

#include <cmath>

#include "optim/clip.h"

namespace minitorch::zero {

StepResult run_step(const StepRequest& r, optim::AdamW& adamw, const StepParts& parts) {
  // Every rank gets the same sum, so every rank takes the same overflow decision.
  const double norm = std::sqrt(sum_over_model(r, parts.sum_squares())) / r.loss_scale;
  adamw.set_lr(r.lr);
  if (!std::isfinite(norm) && r.skip_on_overflow) {  // fp16 overflow: nothing changes but the gradients
    parts.zero_gradients();
    return {norm, true};
  }
  parts.update(r.max_norm > 0 ? optim::clip_coefficient(norm, r.max_norm) : 1.0);
  parts.zero_gradients();
  return {norm, false};
}

}  // namespace minitorch::zero
