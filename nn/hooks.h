#pragma once
/// \file hooks.h
/// Module hooks: callbacks around a module's forward and backward, the seam that ZeRO-3 (gather a
/// unit's parameters before it runs, release them after), activation checkpointing and pipelines
/// use. Every layer's forward goes through Module::call (module.h), which runs them:
///
///     forward:   pre-forward(module, inputs)  ->  body  ->  post-forward(module, inputs, output)
///     backward:  pre-backward(module, dL/d output)   when the gradient of the output first arrives
///                post-backward(module)               when every parameter of the module's subtree
///                                                    has its final gradient for this backward
///
/// Each kind fires in registration order; registering returns a HookHandle (minitorch/hooks.h)
/// that removes the hook when destroyed. A module without hooks pays one null test per forward.
///
/// \code
///   using namespace minitorch;
///   std::vector<std::string> log;
///   std::vector<HookHandle> handles;
///   for (auto& block : model.blocks) {
///     handles.push_back(block->register_pre_forward_hook([&](nn::Module& m, std::span<const Tensor>) {
///       log.push_back("gather " + m.path());   // ZeRO-3: all-gather the block's parameters here
///     }));
///     handles.push_back(block->register_post_backward_hook([&](nn::Module& m) {
///       log.push_back("release " + m.path());  // every gradient of the block is final
///     }));
///   }
///   autograd::backward(model.loss(idx, targets));
///   // log: gather transformer.h.0, gather transformer.h.1, release transformer.h.1, release transformer.h.0
/// \endcode
///
/// Pre-backward is an identity node put on the module's output (PyTorch's BackwardHook); it is
/// added only while the module has a backward hook. Post-backward counts down with gradient hooks
/// on the subtree's distinct parameters, armed when pre-backward fires:
///  - a tied parameter (GPT's wte.weight, also lm_head.weight) is final after its last use, so a
///    module holding one fires post-backward only then (lm_head fires at the end of the backward);
///  - a parameter this backward does not reach (unused, or frozen) does not hold a module back
///    forever: when the backward ends, every armed module that has not fired does (queue_callback);
///  - a module fires after its armed descendants (children first), and once per backward even if
///    its forward ran several times;
///  - a module whose output gets no gradient (unused in the loss) fires neither backward hook.
/// autograd::grad fires no hooks: the identity node passes gradients through silently there.
/// The hooks may change parameters' data (Tensor::set_data / release_data): graph nodes read a
/// parameter's storage when backward runs, not when forward saved it.
#include <functional>
#include <span>

#include "minitorch/hooks.h"
#include "minitorch/tensor.h"

namespace minitorch::nn {

class Module;

/// Before the forward body: the module and the inputs it was called with.
using PreForwardHook = std::function<void(Module&, std::span<const Tensor> inputs)>;
/// After the forward body: the inputs and the output the caller gets.
using PostForwardHook = std::function<void(Module&, std::span<const Tensor> inputs, const Tensor& output)>;
/// When the gradient of the module's output first arrives in a backward: dL/d(output).
using PreBackwardHook = std::function<void(Module&, const Tensor& grad_output)>;
/// When every parameter of the module's subtree has its final gradient for this backward.
using PostBackwardHook = std::function<void(Module&)>;

/// A module's hooks and its post-backward countdown (nn/hooks.cpp). Created by the first
/// registration; a module that never had a hook has none.
struct ModuleHooks;

}  // namespace minitorch::nn
