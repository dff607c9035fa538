#pragma once
/// \file engine.h
/// The backward engine.
///
/// \code
///   using namespace minitorch;
///   Tensor w = Tensor::ones({3}).set_requires_grad();
///   Tensor loss = autograd::sum(autograd::mul(w, w));  // L = sum(w²)
///   autograd::backward(loss);                          // w.grad() == 2w
/// \endcode
#include "autograd/node.h"

namespace minitorch::autograd {

/// Computes dL/dleaf for every leaf that requires grad and that `root` depends on, and accumulates
/// it into leaf.grad() (adding to what is there, as PyTorch does). `grad_root` defaults to 1 for a
/// one-element root. Leaves' gradient hooks run as soon as that leaf's gradient is final, while the
/// rest of the backward is still running (DDP starts its all-reduce from there).
/// The graph's saved tensors are freed afterwards; a second backward through it is an error.
void backward(const Tensor& root, const Tensor& grad_root = Tensor());

}  // namespace minitorch::autograd
