#pragma once
/// \file node.h
/// A node of the autograd graph: the op that produced a tensor. It remembers the tensors it read
/// (its edges back toward the leaves) and whatever it saved to compute its backward.
///
/// The whole idea of reverse mode fits here: an op's output holds `grad_fn`; `grad_fn` holds the
/// op's inputs; backward() walks from the loss to the leaves in reverse topological order, asking
/// each node to turn dL/d(output) into dL/d(input) for every input (the chain rule).
#include <memory>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch::autograd {

struct Node {
  virtual ~Node() = default;
  /// dL/d(inputs[i]) for every input, given dL/d(output). Entries for inputs that need no gradient
  /// may be left undefined.
  virtual std::vector<Tensor> backward(const Tensor& grad_output) = 0;
  /// The op's name, for error messages and traces ("MatmulBackward").
  virtual const char* name() const = 0;
  /// Drops saved tensors once backward has run (frees activation memory).
  virtual void release_saved() {}

  /// The op's inputs, in order; undefined where an input does not need a gradient.
  std::vector<Tensor> inputs;
  /// Shape and dtype of the output, to check gradients against.
  Shape output_shape;
  bool released = false;
};

/// True if gradients are being recorded on this thread (see NoGradGuard).
bool grad_enabled();

/// Disables graph recording while it lives (like torch.no_grad()): ops return plain tensors.
/// \code
///   { minitorch::autograd::NoGradGuard guard; auto y = model.forward(x); }  // no graph kept
/// \endcode
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// True if `t` takes part in differentiation (a leaf with requires_grad, or an op output in a graph).
inline bool needs_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }

/// Connects `output` to the graph through `node` if grad mode is on and any input needs a gradient;
/// inputs that need none are stored as undefined tensors. Returns `output`.
Tensor record(Tensor output, std::shared_ptr<Node> node, std::vector<Tensor> inputs);

}  // namespace minitorch::autograd
