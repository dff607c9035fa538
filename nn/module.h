#pragma once
/// \file module.h
/// `Module`: a tree of layers that owns named parameters, like torch.nn.Module.
///
/// A module registers its parameters (leaf tensors that require grad) and its child modules under
/// short names; the tree gives every parameter a dotted name ("transformer.h.0.attn.c_attn.weight").
/// The order is the registration order, depth first with a module's own parameters before its
/// children's, exactly as PyTorch's `named_parameters()` walks a model. GPT names follow nanoGPT
/// (docs/design.md §3), so a state dict moves between minitorch and a PyTorch nanoGPT without renaming.
///
/// \code
///   using namespace minitorch;
///   struct TwoLayer : nn::Module {
///     std::shared_ptr<nn::Linear> fc1, fc2;
///     TwoLayer(Generator& gen) {
///       fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8, /*bias=*/true, gen));
///       fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 2, /*bias=*/true, gen));
///     }
///     Tensor forward(const Tensor& x) { return fc2->forward(autograd::gelu(fc1->forward(x))); }
///   };
///   Generator gen(1337);
///   TwoLayer net(gen);
///   for (auto& [name, p] : net.named_parameters())   // fc1.weight (8, 4), fc1.bias (8), fc2.weight ...
///     std::cout << name << " " << shape_str(p.shape()) << "\n";
///   net.num_parameters();                            // 8*4 + 8 + 2*8 + 2 = 58
///   net.zero_grad();                                 // grads -> undefined (set_to_none)
///   auto sd = net.state_dict();                      // name -> tensor (shares storage)
///   net.load_state_dict(sd);                         // copies values in; checks names and shapes
/// \endcode
///
/// Parameters live in memory tagged `MemTag::param` (docs/design.md §3): layers create them under
/// `TagScope(MemTag::param)`, and register_parameter() re-tags a tensor created elsewhere.
/// Each parameter tensor also carries its full dotted name (`Tensor::name()`), for traces and errors.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "minitorch/dtype.h"
#include "minitorch/events.h"
#include "minitorch/hooks.h"
#include "minitorch/tensor.h"
#include "nn/hooks.h"

namespace minitorch::nn {

/// (name, tensor) pairs in a fixed order: what named_parameters() and state_dict() return.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  Module() = default;
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- building the tree ----
  /// Registers `param` under `name` (no dots): marks it requires_grad, moves its storage to the
  /// `param` tag, and names the tensor with its dotted path from the root of the tree (if it has no
  /// name yet: a tied tensor keeps its first name). Returns the tensor. A name registered twice throws.
  Tensor register_parameter(const std::string& name, Tensor param);
  /// Registers a child module under `name` (no dots) and renames its parameters with their full
  /// path. Modules may be attached in any order (a child first built, then attached; or attached
  /// empty and filled later). A module belongs to one parent. Returns `child`, so a field can be set
  /// in the same line.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    add_child(name, child);
    return child;
  }

  // ---- walking the tree ----
  /// Every distinct parameter tensor with its dotted name, in registration order. A tensor that is
  /// registered twice (a tied weight) appears once, under the first name.
  NamedTensors named_parameters() const;
  /// The tensors of named_parameters().
  std::vector<Tensor> parameters() const;
  /// Every (name, tensor) including tied duplicates (nanoGPT's state_dict has both
  /// `transformer.wte.weight` and `lm_head.weight`). The tensors share storage with the model.
  NamedTensors state_dict() const;
  /// This module ("" ) and every descendant with its dotted name, depth first.
  std::vector<std::pair<std::string, Module*>> named_modules();
  /// The direct children, in registration order.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }
  /// The parameter registered directly on this module under `name`; throws if there is none.
  Tensor parameter(const std::string& name) const;

  /// Copies values from `state` into the parameters (converting dtype if needed). Everything is
  /// checked before anything is copied, and the first problem throws one std::runtime_error naming
  /// the key: a shape mismatch (both shapes), a key the model lacks ("unexpected key"), or with
  /// `strict` a parameter name not in `state` ("missing key"). A tied tensor counts as present if
  /// any of its names is in `state` (safetensors files drop tied duplicates).
  void load_state_dict(const NamedTensors& state, bool strict = true);

  /// Number of parameter elements, each distinct tensor counted once (a tied weight once): Ψ.
  std::int64_t num_parameters() const;
  /// Sets every parameter's gradient to undefined (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  /// Converts every parameter to `dtype` in place: the tensor handles stay the same (so tied weights
  /// stay tied and an optimizer built earlier still sees them); the new storage is tagged `param`.
  void to(DType dtype);
  /// Moves every parameter to `device` in place, the same way: handles kept, tied weights stay tied, an
  /// optimizer built afterwards allocates its state there (PyTorch's `model.to(device)`). Gradients are
  /// dropped.
  void to(Device device);

  /// Training / evaluation mode, set on the whole subtree (nothing depends on it yet: no dropout).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// This module's dotted path from the root of its tree ("transformer.h.0"; "" for the root).
  std::string path() const;

  // ---- hooks (nn/hooks.h): each kind runs in registration order while its handle lives ----
  /// Runs before the forward body, with the inputs.
  /// \code
  ///   HookHandle h = block->register_pre_forward_hook([](nn::Module& m, std::span<const Tensor> in) {
  ///     std::printf("%s <- %s\n", m.path().c_str(), shape_str(in[0].shape()).c_str());
  ///   });
  ///   h.remove();  // or let it go out of scope
  /// \endcode
  [[nodiscard]] HookHandle register_pre_forward_hook(PreForwardHook hook);
  /// Runs after the forward body, with the inputs and the output.
  [[nodiscard]] HookHandle register_post_forward_hook(PostForwardHook hook);
  /// Runs when the gradient of the module's output first arrives in a backward (before any of the
  /// module's own backward), with that gradient. Only outputs of forwards run while a backward hook
  /// is registered carry it.
  [[nodiscard]] HookHandle register_pre_backward_hook(PreBackwardHook hook);
  /// Runs once per backward when every parameter of this module's subtree has its final gradient
  /// (tied and unreached parameters: see nn/hooks.h).
  [[nodiscard]] HookHandle register_post_backward_hook(PostBackwardHook hook);

 protected:
  /// The one path every forward goes through: pre-forward hooks, `body` (the forward itself, a
  /// callable returning the output), the backward-hook node on the output, post-forward hooks.
  /// `inputs` are the tensors the forward takes, for the hooks (several: `call({idx, targets}, ...)`);
  /// other arguments are simply captured by `body`. A module that never had a hook returns body().
  /// \code
  ///   Tensor Linear::forward(const Tensor& x) const {
  ///     return call({x}, [&] { return autograd::linear(x, weight, bias); });  // x: (..., in) -> (..., out)
  ///   }
  /// \endcode
  template <typename Body>
  Tensor call(std::initializer_list<Tensor> inputs, Body&& body) const {
    // Every module's forward passes here: the one place for per-module forward events (the
    // backward ones come from nn::ModulePhaseEvents' hooks). No sink, no hooks: just body().
    if (!hooks_ && !events::enabled()) return body();
    std::optional<events::Span> span;
    if (events::enabled()) span.emplace(events::Category::compute, "forward", path());
    if (!hooks_) return body();
    using B = std::remove_reference_t<Body>;
    return call_with_hooks(std::span<const Tensor>(inputs.begin(), inputs.size()),
                           [](void* b) -> Tensor { return (*static_cast<B*>(b))(); },
                           const_cast<void*>(static_cast<const void*>(&body)));
  }

 private:
  friend struct ModuleHooks;
  /// call() when the module has hooks (nn/hooks.cpp). `run(body)` runs the forward.
  Tensor call_with_hooks(std::span<const Tensor> inputs, Tensor (*run)(void*), void* body) const;
  ModuleHooks& hooks();  // created on first use
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  void collect(const std::string& prefix, NamedTensors& out) const;  // all names, with duplicates
  void check_local_name(const std::string& name, const char* what) const;
  /// "a.b." : this module's path from the root of its tree, with a trailing dot ("" for a root).
  std::string path_prefix() const;

  NamedTensors params_;  // local names
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
  const Module* parent_ = nullptr;  // set when registered; the parent owns this module
  std::string name_in_parent_;
  std::shared_ptr<ModuleHooks> hooks_;  // null until a hook is registered (the fast path of call())
};

}  // namespace minitorch::nn
