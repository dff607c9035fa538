#pragma once
/// \file checkpoint.h
/// Activation checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"; what
/// ZeRO-R and DeepSpeed's `activation_checkpointing` do): run a segment of the forward without
/// recording a graph, keep only its inputs, and in backward run the segment again — this time recording
/// — and differentiate it. Memory: one segment's activations at a time instead of all of them; cost:
/// one more forward of every checkpointed segment.
///
/// \code
///   // y = block(x), with block's activations freed after forward and recomputed in backward
///   Tensor y = autograd::checkpoint([&](const std::vector<Tensor>& in) { return block.forward(in[0]); }, {x});
///   autograd::backward(autograd::sum(y));   // x.grad() and block's parameters' .grad as without it
/// \endcode
#include <functional>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch::autograd {

/// A segment: a deterministic function of its inputs (and of tensors it captures, e.g. parameters).
using Segment = std::function<Tensor(const std::vector<Tensor>&)>;

/// y = fn(inputs), recorded as ONE node whose backward recomputes fn and differentiates it.
///   inputs: the segment's activations in (kept, detached, until backward); tensors fn captures
///           (parameters) are not kept by the node: their gradients are accumulated into their .grad,
///           and their hooks fire, by a backward nested inside the outer one (as PyTorch's reentrant
///           checkpoint does), so DDP / ZeRO reduce each of them once, during the recompute's backward.
/// With grad mode off (NoGradGuard) it is just fn(inputs). Nesting works: a checkpoint inside fn runs
/// plainly in the outer forward and becomes a node of its own in the recompute.
/// Under autograd::grad(), fn's inputs get their gradients, but a captured tensor that requires grad
/// is an error (grad() writes no .grad, and such a tensor is no edge of the outer graph).
/// fn must compute the same thing twice: no randomness (minitorch's GPT has no dropout).
/// Each input gets the gradient the recompute's backward sums at it, in the dtype it arrives in (not
/// rounded to the input's, as a leaf's .grad would be), so gradients and losses are those of the same
/// graph without checkpoint() bit for bit, in bf16 and fp16 too, when the inputs are used only inside
/// the segment (a GPT block's input is); an input used outside as well gets its parts summed in another order.
Tensor checkpoint(const Segment& fn, const std::vector<Tensor>& inputs);

}  // namespace minitorch::autograd
