#pragma once
/// \file step_sequence.h
/// The optimizer step of every stage (GradientStrategy::step, zero/strategy.h), written once:
///
///   norm     √(Σ g²) / loss scale: Σ g² of the gradients this rank holds, summed over the ranks that hold
///            the others and over the pipeline and the tensor group (sum_over_model), so every rank finds the same norm
///   skip     not finite and skip_on_overflow (fp16 overflow): the gradients zeroed, nothing else changes
///   clip     multiplier max_norm / (norm + 1e-6) when the norm is above max_norm (optim/clip.h), else 1
///   update   this rank's parameters (or shard) with each gradient × clip / loss scale
///   zero     the gradients
///
/// What the stages do differently is passed in (StepParts): stage 0 sums its whole, already averaged
/// gradients and runs AdamW's own step (tiled when it must unscale fp16 in f32); stages 1–3 all-reduce the
/// sum of their shard as one scalar and run the tiled step (zero/tiled_step.h) or, with ZeRO-Offload, the
/// host's (zero/offload_optimizer.h), then gather the updated parameters.
#include <functional>

#include "optim/adamw.h"
#include "zero/strategy.h"

namespace minitorch::zero {

/// The parts of a step that differ between the stages.
struct StepParts {
  /// Σ g² of the (loss-scaled) gradients, over every rank of the data-parallel group, without
  /// StepRequest::norm_excluded; not yet the pipeline or the tensor group.
  std::function<double()> sum_squares;
  /// The update with `clip` (in (0, 1]) and the request's loss scale, then what follows it (frames, gathers).
  std::function<void(double clip)> update;
  /// The gradients zeroed for the next step (also on a skipped one).
  std::function<void()> zero_gradients;
};

/// The sequence above, with `adamw`'s learning rate set to request.lr (also on a skipped step: lr()
/// reports the rate this update would have used).
StepResult run_step(const StepRequest& request, optim::AdamW& adamw, const StepParts& parts);

}  // namespace minitorch::zero
