/// \file lr_schedule.cpp
/// DeepSpeed's schedules, line for line (deepspeed/runtime/lr_schedules.py), so that a config moved
/// between DeepSpeed and minitorch gives the same learning rate at every step.
#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>

#include "minitorch/json_limits.h"

namespace minitorch::optim {

const char* lr_schedule_name(LRScheduleType type) {
  switch (type) {
    case LRScheduleType::constant: return "constant";
    case LRScheduleType::warmup_lr: return "WarmupLR";
    case LRScheduleType::warmup_decay_lr: return "WarmupDecayLR";
    case LRScheduleType::warmup_cosine_lr: return "WarmupCosineLR";
  }
  return "?";
}

LRScheduleType parse_lr_schedule_type(const std::string& name) {
  for (auto t : {LRScheduleType::warmup_lr, LRScheduleType::warmup_decay_lr, LRScheduleType::warmup_cosine_lr})
    if (name == lr_schedule_name(t)) return t;
  std::string hint;
  if (name == "LRRangeTest" || name == "OneCycle") hint = " (DeepSpeed has it; minitorch does not implement it)";
  throw std::runtime_error("unknown scheduler type '" + truncate_for_message(name) + "'" + hint +
                           "; valid: WarmupLR, WarmupDecayLR, WarmupCosineLR");
}

const char* warmup_type_name(WarmupType type) { return type == WarmupType::log ? "log" : "linear"; }

WarmupType parse_warmup_type(const std::string& name) {
  if (name == "log") return WarmupType::log;
  if (name == "linear") return WarmupType::linear;
  throw std::runtime_error("unknown warmup_type '" + truncate_for_message(name) + "'; valid: log, linear");
}

LRSchedule make_lr_schedule(const LRScheduleConfig& c, float base_lr) {
  LRSchedule s;
  s.type_ = c.type;
  s.base_lr_ = base_lr;
  if (c.type == LRScheduleType::constant) return s;
  // DeepSpeed: "warmup_num_steps must be a positive integer", then clamps to at least 2 so that
  // log(warmup_num_steps) is never 0.
  if (c.warmup_num_steps <= 0)
    throw std::runtime_error("scheduler: warmup_num_steps must be a positive integer, got " +
                             std::to_string(c.warmup_num_steps));
  if (c.type != LRScheduleType::warmup_lr && c.total_num_steps <= 0)
    throw std::runtime_error(std::string("scheduler: ") + lr_schedule_name(c.type) +
                             " needs params.total_num_steps > 0");
  s.warmup_type_ = c.warmup_type;
  s.warmup_steps_ = std::max<std::int64_t>(2, c.warmup_num_steps);
  s.inverse_log_warmup_ = 1.0 / std::log(static_cast<double>(s.warmup_steps_));
  s.total_steps_ = c.total_num_steps;
  s.min_lr_ = c.warmup_min_lr;
  // WarmupLR's warmup_max_lr defaults to the optimizer's lr; WarmupDecayLR's own signature
  // defaults it to 0.001 and passes that down.
  s.max_lr_ = c.warmup_max_lr.value_or(c.type == LRScheduleType::warmup_decay_lr ? 0.001 : base_lr);
  s.warmup_min_ratio_ = c.warmup_min_ratio;
  s.cos_min_ratio_ = c.cos_min_ratio;
  return s;
}

double LRSchedule::warmup_gamma(std::int64_t step) const {
  if (warmup_type_ == WarmupType::log) return inverse_log_warmup_ * std::log(static_cast<double>(step + 1));
  return static_cast<double>(step) / static_cast<double>(warmup_steps_);
}

double LRSchedule::lr_double(std::int64_t step) const {
  switch (type_) {
    case LRScheduleType::constant:
      return base_lr_;
    case LRScheduleType::warmup_lr:
    case LRScheduleType::warmup_decay_lr: {
      if (step < 0) return min_lr_;  // DeepSpeed: "before it has started" -> min_lrs
      double gamma = 1.0;
      if (step < warmup_steps_) {
        gamma = warmup_gamma(step);
      } else if (type_ == LRScheduleType::warmup_decay_lr) {
        // Linear decay from warmup_max_lr at the end of warmup to warmup_min_lr at total_num_steps.
        gamma = std::max(0.0, static_cast<double>(total_steps_ - step) /
                                  std::max(1.0, static_cast<double>(total_steps_ - warmup_steps_)));
      }
      return min_lr_ + (max_lr_ - min_lr_) * gamma;
    }
    case LRScheduleType::warmup_cosine_lr: {
      if (step < 0) return 0.0;
      double ratio;
      if (step < warmup_steps_) {
        ratio = warmup_min_ratio_ + warmup_gamma(step) * (1.0 - warmup_min_ratio_);
      } else {
        // Progress is clamped to [0, 1] (current DeepSpeed) so the ratio rests at cos_min_ratio
        // after total_num_steps instead of rising again.
        double real_last = static_cast<double>(step - warmup_steps_ + 1);
        double real_total = static_cast<double>(std::max<std::int64_t>(1, total_steps_ - warmup_steps_));
        double progress = std::min(1.0, real_last / real_total);
        double cos_ratio = (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
        ratio = std::max(0.0, cos_min_ratio_ + (1.0 - cos_min_ratio_) * cos_ratio);
      }
      return base_lr_ * ratio;
    }
  }
  return base_lr_;
}

std::string LRSchedule::describe() const {
  std::ostringstream os;
  os << lr_schedule_name(type_) << "(";
  switch (type_) {
    case LRScheduleType::constant:
      os << "lr " << base_lr_;
      break;
    case LRScheduleType::warmup_lr:
    case LRScheduleType::warmup_decay_lr:
      os << "min " << min_lr_ << ", max " << max_lr_ << ", warmup " << warmup_steps_ << " "
         << warmup_type_name(warmup_type_);
      if (type_ == LRScheduleType::warmup_decay_lr) os << ", total " << total_steps_;
      break;
    case LRScheduleType::warmup_cosine_lr:
      os << "base " << base_lr_ << ", warmup " << warmup_steps_ << " " << warmup_type_name(warmup_type_)
         << " from ratio " << warmup_min_ratio_ << ", total " << total_steps_ << ", cos_min_ratio "
         << cos_min_ratio_;
      break;
  }
  os << ")";
  return os.str();
}

}  // namespace minitorch::optim
