#include "runtime/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace minitorch::runtime {

LossScaler::LossScaler(const Fp16Config& c)
    : dynamic_(c.dynamic()),
      scale_(c.dynamic() ? std::ldexp(1.0, c.initial_scale_power) : c.loss_scale),
      min_scale_(c.min_loss_scale),
      window_(c.loss_scale_window),
      hysteresis_(c.hysteresis),
      hysteresis_left_(c.hysteresis),
      consecutive_hysteresis_(c.consecutive_hysteresis) {}

void LossScaler::update(bool overflow) {
  if (overflow) ++skipped_;
  if (!dynamic_) {  // a static scale: only counted
    ++iter_;
    return;
  }
  if (overflow) {
    if (hysteresis_ == 1 || hysteresis_left_ == 1) {
      if (scale_ <= min_scale_) {
        std::ostringstream os;
        os << "Current loss scale already at minimum - cannot decrease scale anymore (fp16 loss scale " << scale_
           << " = fp16.min_loss_scale and the gradients still overflow at step " << iter_ + 1
           << "): the training diverged; lower optimizer.params.lr, set gradient_clipping, or use bf16";
        throw std::runtime_error(os.str());
      }
      scale_ = std::max(scale_ / 2, min_scale_);
    } else {
      --hysteresis_left_;  // forgiven: the scale stays
    }
    last_overflow_iter_ = iter_;
  } else {
    if (consecutive_hysteresis_) hysteresis_left_ = hysteresis_;
    if ((iter_ - last_overflow_iter_) % window_ == 0) {
      hysteresis_left_ = hysteresis_;
      scale_ *= 2;
    }
  }
  ++iter_;
}

void LossScaler::set_state(const State& s) {
  if (!(s.scale > 0) || s.hysteresis_left < 1 || s.iter < 0 || s.skipped < 0 || s.last_overflow_iter < -1)
    throw std::invalid_argument("LossScaler::set_state: invalid state (scale must be > 0, hysteresis >= 1, counts >= 0)");
  scale_ = s.scale;
  hysteresis_left_ = s.hysteresis_left;
  iter_ = s.iter;
  last_overflow_iter_ = s.last_overflow_iter;
  skipped_ = s.skipped;
}

}  // namespace minitorch::runtime
