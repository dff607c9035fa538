#include "optim/clip.h"

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "minitorch/allocator.h"
#include "minitorch/ops.h"

namespace minitorch::optim {

namespace {
/// The distinct parameters of `params` that have a gradient.
std::vector<Tensor> with_grads(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  std::set<const TensorImpl*> seen;
  for (const auto& p : params)
    if (p.defined() && p.grad().defined() && seen.insert(p.impl_ptr().get()).second) out.push_back(p);
  return out;
}
}  // namespace

double grad_sum_squares(const std::vector<Tensor>& params) {
  double total = 0;
  for (const auto& p : with_grads(params)) total += ops::sum_squares(p.grad());
  return total;
}

void scale_grads(const std::vector<Tensor>& params, float coef) {
  for (auto p : with_grads(params)) {
    Tensor g = p.grad();
    if (!g.is_contiguous()) {  // scale_ works in place on contiguous tensors
      TagScope scope(MemTag::grad);
      g = g.contiguous();
      p.set_grad(g);
    }
    ops::scale_(g, coef);
  }
}

double clip_coefficient(double total_norm, double max_norm) {
  if (!std::isfinite(total_norm) || total_norm <= max_norm) return 1.0;
  return max_norm / (total_norm + 1e-6);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  if (!(max_norm > 0))
    throw std::invalid_argument("clip_grad_norm: max_norm must be > 0, got " + std::to_string(max_norm) +
                                " (DeepSpeed's gradient_clipping 0 means: do not call it)");
  double norm = std::sqrt(grad_sum_squares(params));
  double coef = clip_coefficient(norm, max_norm);
  if (coef < 1.0) scale_grads(params, static_cast<float>(coef));
  return norm;
}

double clip_grad_norm(const NamedTensors& params, double max_norm) {
  std::vector<Tensor> ts;
  for (const auto& [n, t] : params) ts.push_back(t);
  return clip_grad_norm(ts, max_norm);
}

}  // namespace minitorch::optim
