#pragma once
/// \file clip.h
/// Global-norm gradient clipping, as torch.nn.utils.clip_grad_norm_ (and DeepSpeed's
/// `gradient_clipping`): the norm of all gradients taken together,
///
///     norm = √(Σ_p Σ_i g_i²)    (accumulated in double);   if norm > max_norm:  g *= max_norm / (norm + 1e-6)
///
/// \code
///   double norm = minitorch::optim::clip_grad_norm(model.parameters(), 1.0);  // pre-clip norm
/// \endcode
///
/// The parts are exposed for sharded gradients (ZeRO): each rank sums the squares of its shard,
/// the sums are all-reduced, and every rank scales its shard by the same coefficient.
#include <vector>

#include "minitorch/tensor.h"
#include "optim/optimizer.h"

namespace minitorch::optim {

/// Σ g² over the gradients of `params` (a tensor given twice counts once; no grad = 0), in double.
double grad_sum_squares(const std::vector<Tensor>& params);
/// g *= coef for every defined gradient (each tensor once).
void scale_grads(const std::vector<Tensor>& params, float coef);
/// The clipping coefficient for a total norm: max_norm / (norm + 1e-6) if norm > max_norm, else 1.
/// A non-finite norm gives 1 (nothing is scaled; the caller decides whether to skip the step).
double clip_coefficient(double total_norm, double max_norm);

/// Clips in place and returns the total norm before clipping. max_norm must be > 0.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);
double clip_grad_norm(const NamedTensors& params, double max_norm);

}  // namespace minitorch::optim
