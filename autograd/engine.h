#pragma once
/// \file engine.h
/// The backward engine: backward() accumulates into leaves' .grad and fires their hooks; grad()
/// returns gradients without touching any .grad (what activation checkpointing calls inside backward).
///
/// \code
///   using namespace minitorch;
///   Tensor w = Tensor::ones({3}).set_requires_grad();
///   Tensor loss = autograd::sum(autograd::mul(w, w));  // L = sum(w²)
///   autograd::backward(loss);                          // w.grad() == 2w
///
///   Tensor h = autograd::exp(w);
///   Tensor l2 = autograd::sum(autograd::mul(h, h));    // L2 = sum(e^{2w})
///   auto g = autograd::grad({l2}, {w, h});             // {2e^{2w}, 2h}; w.grad() unchanged
/// \endcode
#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/node.h"

namespace minitorch::autograd {

/// Computes dL/dleaf for every leaf that requires grad and that `root` depends on, and accumulates
/// it into leaf.grad() (adding to what is there, as PyTorch does). `grad_root` defaults to 1 for a
/// one-element root. Leaves' gradient hooks run as soon as that leaf's gradient is final, while the
/// rest of the backward is still running (DDP starts its all-reduce from there).
/// The graph's saved tensors are freed afterwards; a second backward through it is an error.
void backward(const Tensor& root, const Tensor& grad_root = Tensor());

/// d(Σ_k outputs[k] · grad_outputs[k]) / d(inputs[i]) for every input: a leaf that requires grad
/// or an intermediate tensor of the graph. Nothing is accumulated into any .grad and no hook fires:
/// no tensor gradient hook, and no module backward hook (hooks_enabled() is false while it runs).
/// An input the outputs do not depend on gets an undefined tensor (not zeros).
///   outputs: tensors that require grad; grad_outputs: one per output, same shapes (empty, or an
///            undefined entry, means 1 for a one-element output)
///   inputs:  tensors that require grad -> one gradient per input, shaped like it
/// Only the nodes between the outputs and the inputs run; unless `retain_graph`, they free what they
/// saved (so a later backward through them fails, as after backward()). Safe to call while another
/// backward runs (from a node's backward or a hook): activation checkpointing recomputes a block's
/// forward inside backward and differentiates it with this. The results may share storage with
/// grad_outputs or with each other; clone one before writing into it.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false);

/// Runs `fn` once the backward (or grad) running on this thread has finished all its nodes and hooks
/// (PyTorch's queue_callback): module post-backward hooks use it for parameters a backward did not
/// reach. Callbacks run in the order queued and may queue more. If the backward throws, its
/// callbacks are dropped. Throws std::logic_error when no backward is running.
void queue_callback(std::function<void()> fn);
/// An id of the backward or grad() running on this thread (0 when none). Each run gets a new one,
/// so state kept per backward (a module's post-backward countdown) can tell a new run from a stale one.
std::uint64_t current_backward_id();
/// False while autograd::grad() runs on this thread (it fires no hooks); true otherwise, also
/// inside a backward() started from within grad().
bool hooks_enabled();

}  // namespace minitorch::autograd
