#pragma once
/// \file lr_schedule.h
/// Learning-rate schedules as pure functions of the step, computed exactly as DeepSpeed's
/// deepspeed/runtime/lr_schedules.py does (WarmupLR, WarmupDecayLR, WarmupCosineLR), plus a constant.
///
/// Step convention. `lr(i)` is the value DeepSpeed's scheduler returns once it has been stepped to
/// `last_batch_iteration = i`. DeepSpeed's engine calls `scheduler.step()` *after* each
/// `optimizer.step()`, so optimizer update number k (0-based) runs with `lr(k - 1)`; `lr(-1)` is the
/// value the scheduler installs at construction (warmup_min_lr, or 0 for WarmupCosineLR).
/// `lr_for_update(k)` is that shifted value, for an engine that wants DeepSpeed's exact sequence.
///
/// \code
///   minitorch::optim::LRScheduleConfig c;
///   c.type = minitorch::optim::LRScheduleType::warmup_decay_lr;
///   c.warmup_max_lr = 1e-3; c.warmup_num_steps = 100; c.total_num_steps = 1000;
///   auto sched = minitorch::optim::make_lr_schedule(c, /*base_lr=*/1e-3f);
///   float lr = sched.lr(50);   // log warmup: 1e-3 * ln(51) / ln(100)
/// \endcode
#include <cstdint>
#include <optional>
#include <string>

namespace minitorch::optim {

enum class LRScheduleType { constant, warmup_lr, warmup_decay_lr, warmup_cosine_lr };
/// How the warmup rises from its minimum to its maximum.
enum class WarmupType { log, linear };

/// "constant", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR" (DeepSpeed's type names).
const char* lr_schedule_name(LRScheduleType type);
/// Parses DeepSpeed's scheduler type name (case-sensitive, as DeepSpeed); throws std::runtime_error
/// listing the valid names.
LRScheduleType parse_lr_schedule_type(const std::string& name);
/// "log" or "linear".
const char* warmup_type_name(WarmupType type);
/// Parses "log" / "linear"; throws std::runtime_error otherwise. (DeepSpeed warns and falls back to
/// log on an unknown name; we refuse, because a typo silently changes the schedule.)
WarmupType parse_warmup_type(const std::string& name);

/// The parameters of DeepSpeed's `scheduler.params`, with DeepSpeed's code defaults. Plain data so
/// that zero/config (which parses the JSON) can hold it without optim/ depending on zero/.
struct LRScheduleConfig {
  LRScheduleType type = LRScheduleType::constant;
  // WarmupLR / WarmupDecayLR
  double warmup_min_lr = 0.0;
  /// Unset: WarmupLR uses the optimizer's lr (current DeepSpeed code), WarmupDecayLR uses 0.001
  /// (its own default, which it passes on explicitly).
  std::optional<double> warmup_max_lr;
  // all warmup schedules
  std::int64_t warmup_num_steps = 1000;
  WarmupType warmup_type = WarmupType::log;
  /// Required by WarmupDecayLR and WarmupCosineLR.
  std::int64_t total_num_steps = 0;
  // WarmupCosineLR (ratios of the optimizer's base lr)
  double warmup_min_ratio = 0.0;
  double cos_min_ratio = 0.0001;
};

/// A schedule bound to its values: `lr(step)` is a pure function, so a resumed run (or any rank)
/// gets the same learning rate for the same step without carrying scheduler state.
class LRSchedule {
 public:
  /// Constant `base_lr`.
  LRSchedule() = default;
  /// The learning rate after the scheduler has been stepped to iteration `step` (see the file
  /// comment); negative steps give DeepSpeed's "not started" value.
  float lr(std::int64_t step) const { return static_cast<float>(lr_double(step)); }
  /// Same in double precision (what DeepSpeed's Python computes before it reaches the optimizer).
  double lr_double(std::int64_t step) const;
  /// The lr DeepSpeed's engine applies in optimizer update `update` (0-based): lr(update - 1).
  float lr_for_update(std::int64_t update) const { return lr(update - 1); }
  LRScheduleType type() const { return type_; }
  /// One line, e.g. "WarmupDecayLR(min 0, max 0.001, warmup 100 log, total 1000)".
  std::string describe() const;

 private:
  friend LRSchedule make_lr_schedule(const LRScheduleConfig& config, float base_lr);
  /// The warmup fraction in [0, 1) for a step inside the warmup (DeepSpeed's gamma).
  double warmup_gamma(std::int64_t step) const;

  LRScheduleType type_ = LRScheduleType::constant;
  WarmupType warmup_type_ = WarmupType::log;
  double base_lr_ = 1e-3;
  double min_lr_ = 0.0, max_lr_ = 0.0;
  std::int64_t warmup_steps_ = 2, total_steps_ = 0;
  double inverse_log_warmup_ = 0.0;
  double warmup_min_ratio_ = 0.0, cos_min_ratio_ = 0.0;
};

/// Builds the schedule. `base_lr` is the optimizer's lr (used by constant, by WarmupLR when
/// warmup_max_lr is unset, and as the reference of WarmupCosineLR's ratios). Throws
/// std::runtime_error, as DeepSpeed does, if warmup_num_steps <= 0, and (our check) if a decaying
/// schedule has no total_num_steps.
LRSchedule make_lr_schedule(const LRScheduleConfig& config, float base_lr);

}  // namespace minitorch::optim
