#pragma once
/// \file adamw.h
/// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay, as torch.optim.AdamW and
/// DeepSpeed's FusedAdam (adam_w_mode) compute it. For each parameter p with gradient g, at step t:
///
///     m = β1 m + (1 − β1) g                 v = β2 v + (1 − β2) g²
///     p = p − lr · ( m / (1 − β1^t) / (√(v / (1 − β2^t)) + ε)  +  wd · p )
///
/// one fused pass per tensor (ops::adamw_step). m and v are f32, allocated at the first step under
/// `MemTag::optim`: 8 bytes per parameter (K = 8). A bf16 parameter also gets an f32 master copy:
/// the update runs on the master and the rounded value is written back into the bf16 parameter,
/// so K = 4 + 4 + 4 = 12 bytes per parameter — the mixed-precision layout of the ZeRO paper.
///
/// \code
///   using namespace minitorch;
///   // nanoGPT's groups: weight decay for dim >= 2 tensors only
///   optim::AdamW opt(model.named_parameters(), {.lr = 1e-3f, .beta2 = 0.99f, .weight_decay = 0.1f});
///   autograd::backward(model.loss(x, y));
///   opt.step();
///   opt.zero_grad();
///   for (auto& [name, t] : opt.state_tensors()) save(name, t);   // exp_avg.<p>, exp_avg_sq.<p>, master.<p>
/// \endcode
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace minitorch::optim {

/// Defaults as torch.optim.AdamW (and DeepSpeed's AdamW): betas (0.9, 0.999), eps 1e-8, wd 0.01.
struct AdamWOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

class AdamW : public Optimizer {
 public:
  /// nanoGPT's two groups (decay_groups): weight decay on dim >= 2 tensors, none on the others.
  explicit AdamW(const NamedTensors& params, const AdamWOptions& options = {});
  /// Explicit groups: each group's lr and weight_decay are used; betas and eps from `options`.
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options);

  /// begin_step() and update() of every parameter that has a gradient, with that gradient.
  void step() override;

  /// The pieces of a step, for a caller that feeds the gradient in tiles (ZeRO-3's sub_group_size,
  /// zero/tiled_step.h): begin_step() counts the step once (the t of bias correction), then update()
  /// any number of disjoint ranges of the parameters.
  void begin_step() { ++step_; }
  /// AdamW on elements [begin, begin + grad.numel()) of `param` (flattened; contiguous) of group
  /// `group`, with `grad` ((len) contiguous, f32 or bf16) in place of param.grad(). m, v (and the
  /// master) are allocated for the whole parameter on first use.
  void update(std::size_t group, const std::string& name, const Tensor& param, std::int64_t begin, const Tensor& grad);

  /// "exp_avg.<param>" and "exp_avg_sq.<param>" (f32, the parameter's shape) for every parameter
  /// that has been stepped, plus "master.<param>" (f32) for bf16 parameters; in parameter order.
  NamedTensors state_tensors() const override;
  void load_state(const NamedTensors& state, std::int64_t step_count) override;

  const AdamWOptions& options() const { return options_; }
  /// Bytes of optimizer state allocated so far (m, v and masters).
  std::int64_t state_bytes() const;
  /// Whether the parameter (or piece) `name` has its state yet: AdamW allocates it at its first update.
  bool has_state(const std::string& name) const;
  /// ZeRO-Offload (zero/sharded_optimizer.h): the parameters are f32 masters in host memory, and every
  /// update runs the host AdamW (minitorch/host_adamw.h); `copies` (parameter name -> a 16-bit host tensor
  /// of its shape) receive the updated values rounded, written in the same pass.
  void step_on_host(std::map<std::string, Tensor> copies);

 private:
  struct State {
    Tensor m, v;     // f32 first and second moments
    Tensor master;   // f32 copy of a bf16 parameter (undefined for f32 parameters)
  };
  /// Allocates m, v (and the master for a bf16 parameter) under MemTag::optim.
  State& state_for(const std::string& name, const Tensor& param);

  AdamWOptions options_;
  std::map<std::string, State> state_;
  bool on_host_ = false;
  std::map<std::string, Tensor> copies_;  // step_on_host's 16-bit copies
};

}  // namespace minitorch::optim
