#pragma once
/// \file loss_scaler.h
/// DeepSpeed's loss scaler for fp16 training (`fp16` section; deepspeed/runtime/fp16/loss_scaler.py).
///
/// Why: f16 holds magnitudes from 2^-24 to 65504. Gradients of a language model are often far below
/// 2^-14, where f16 loses precision, or below 2^-24, where they vanish. So backward starts from
/// loss × S instead of loss: every gradient is S times larger and lands in f16's range. The
/// optimizer divides by S again (in f32, folded into the step's gradient multiplier, before the
/// norm is compared with gradient_clipping, so clipping sees the true norm).
///
/// Too large an S overflows: some gradient becomes inf or nan. Then the global gradient norm (one
/// all-reduced scalar, the same on every rank) is not finite, and the step is **skipped**: the
/// gradients are zeroed, the parameters, AdamW's moments and step count stay, and the learning-rate
/// schedule does not advance (DeepSpeed's engine steps its scheduler only when the step was applied).
///
/// The dynamic rule (loss_scale = 0), with hysteresis h and window W, one update() per optimizer step:
///
///   overflow:  if the hysteresis counter is 1 (or h = 1): S = max(S / 2, min_loss_scale) — but if S
///              is already min_loss_scale, training cannot go on: std::runtime_error "Current loss
///              scale already at minimum - cannot decrease scale anymore" (DeepSpeed's message);
///              else: the counter drops by one and S stays (h - 1 overflows are forgiven).
///   no overflow: consecutive_hysteresis: the counter is refilled to h at once;
///              when (steps since the last overflow) is a multiple of W: S = 2·S, and the counter is
///              refilled to h (without consecutive_hysteresis it is refilled only here).
///
/// "Steps since the last overflow" counts from the step after it; before any overflow, from step 0:
/// with W = 1000 and no overflow S doubles after steps 1000, 2000, ... (1-based).
/// A static scale (loss_scale > 0) never changes; overflow steps are still skipped and counted.
///
/// \code
///   runtime::LossScaler scaler(config.fp16);          // S = 2^initial_scale_power
///   autograd::backward(loss, Tensor::full({}, scaler.scale() / G));
///   StepResult r = strategy.step({lr, clip, scaler.scale(), /*skip_on_overflow=*/true});
///   scaler.update(/*overflow=*/r.skipped);         // halve, forgive, or (after W good steps) double
/// \endcode
#include <cstdint>

#include "runtime/config.h"

namespace minitorch::runtime {

class LossScaler {
 public:
  /// The scaler `fp16` asks for (dynamic when loss_scale is 0).
  explicit LossScaler(const Fp16Config& config);

  /// S: what the loss is multiplied by before backward.
  double scale() const { return scale_; }
  bool dynamic() const { return dynamic_; }
  /// Overflows still forgiven before S halves (DeepSpeed's cur_hysteresis).
  int hysteresis_left() const { return hysteresis_left_; }
  /// Optimizer steps taken (cur_iter) and skipped so far.
  std::int64_t steps() const { return iter_; }
  std::int64_t skipped() const { return skipped_; }

  /// The rule above for one optimizer step; `overflow`: its gradients had an inf / nan (it was skipped).
  void update(bool overflow);

  /// What a checkpoint must keep to resume the same schedule of scales.
  struct State {
    double scale = 1;
    int hysteresis_left = 1;
    std::int64_t iter = 0, last_overflow_iter = -1, skipped = 0;
  };
  State state() const { return {scale_, hysteresis_left_, iter_, last_overflow_iter_, skipped_}; }
  void set_state(const State& s);

 private:
  bool dynamic_;
  double scale_, min_scale_;
  int window_, hysteresis_, hysteresis_left_;
  bool consecutive_hysteresis_;
  std::int64_t iter_ = 0, last_overflow_iter_ = -1, skipped_ = 0;
};

}  // namespace minitorch::runtime
