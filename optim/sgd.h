#pragma once
/// \file sgd.h
/// Stochastic gradient descent with momentum, as torch.optim.SGD (dampening 0, no Nesterov):
///
///     d = g + wd · p;     b = d at the first step, else b = μ b + d;     p = p − lr · b
///
/// (without momentum, p = p − lr · d). The momentum buffer is f32 under `MemTag::optim`. A bf16
/// parameter is updated in place with rounding (no master copy: use AdamW for mixed precision).
///
/// \code
///   minitorch::optim::SGD opt(model.named_parameters(), {.lr = 0.1f, .momentum = 0.9f});
///   minitorch::autograd::backward(model.loss(x, y));
///   opt.step();
/// \endcode
#include <map>
#include <string>

#include "optim/optimizer.h"

namespace minitorch::optim {

struct SGDOptions {
  float lr = 1e-2f;
  float momentum = 0.f;
  float weight_decay = 0.f;  // coupled (added to the gradient), as torch.optim.SGD
};

class SGD : public Optimizer {
 public:
  /// One group "default" with the options' lr and weight decay.
  explicit SGD(const NamedTensors& params, const SGDOptions& options = {});

  void step() override;
  /// "momentum_buffer.<param>" for every parameter that has one (momentum > 0, stepped).
  NamedTensors state_tensors() const override;
  void load_state(const NamedTensors& state, std::int64_t step_count) override;

  const SGDOptions& options() const { return options_; }

 private:
  SGDOptions options_;
  std::map<std::string, Tensor> momentum_;
};

}  // namespace minitorch::optim
