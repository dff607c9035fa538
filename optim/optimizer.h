#pragma once
/// \file optimizer.h
/// The optimizer base class: parameter groups (each with its own lr and weight decay), the step
/// count, zero_grad, and the state-tensor interface a checkpoint saves and restores.
///
/// \code
///   using namespace minitorch;
///   optim::AdamW opt(model.named_parameters(), {.lr = 6e-4f, .weight_decay = 0.1f});
///   for (int it = 0; it < iters; ++it) {
///     opt.zero_grad();                          // grads -> undefined (set_to_none)
///     autograd::backward(model.loss(x, y));
///     optim::clip_grad_norm(opt.parameters(), 1.0);
///     opt.set_lr(schedule.lr(it));
///     opt.step();
///   }
///   auto state = opt.state_tensors();           // "exp_avg.<param>", "exp_avg_sq.<param>", ...
///   opt.load_state(state, opt.step_count());    // exact restore
/// \endcode
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch::optim {

/// (name, tensor) pairs; the same type as nn::NamedTensors (optim/ does not include nn/).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Parameters that share hyper-parameters, like a PyTorch param_group.
struct ParamGroup {
  std::string name;        // "decay", "no_decay", or the caller's
  NamedTensors params;     // (parameter name, tensor); names are unique across all groups
  float lr = 1e-3f;
  float weight_decay = 0.f;
};

/// nanoGPT's configure_optimizers split: tensors with dim >= 2 (matmul and embedding weights) go to
/// group "decay" with `weight_decay`; the rest (biases, LayerNorm weights) to "no_decay" with 0.
/// Both groups are returned, in that order, even if one is empty.
std::vector<ParamGroup> decay_groups(const NamedTensors& params, float lr, float weight_decay);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient (parameters without one are skipped);
  /// increments step_count() first.
  virtual void step() = 0;
  /// Sets every parameter's gradient to undefined (PyTorch's set_to_none = True).
  void zero_grad();
  /// Sets the learning rate of every group (what a schedule calls each step).
  void set_lr(float lr);
  /// The first group's learning rate.
  float lr() const;

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// All parameters of all groups, in group order.
  std::vector<Tensor> parameters() const;
  /// Elements over all groups.
  std::int64_t num_parameters() const;
  /// Completed steps (the t of bias correction).
  std::int64_t step_count() const { return step_; }

  /// The optimizer state as named tensors (they share storage with the optimizer): what a
  /// checkpoint saves. Empty before the first step (states are allocated lazily).
  virtual NamedTensors state_tensors() const = 0;
  /// Restores what state_tensors() returned, and the step count. Checks everything first; an
  /// unknown name, a shape mismatch, a state that is not f32 or an incomplete set of states for a
  /// parameter throws std::runtime_error naming it.
  virtual void load_state(const NamedTensors& state, std::int64_t step_count) = 0;

 protected:
  /// Checks the groups: defined, contiguous, floating-point tensors; unique names and tensors.
  explicit Optimizer(std::vector<ParamGroup> groups);
  std::vector<ParamGroup> groups_;
  std::int64_t step_ = 0;
};

}  // namespace minitorch::optim
