#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "autograd/engine.h"
#include "minitorch/not_implemented.h"
#include "minitorch/random.h"

namespace minitorch::autograd {

namespace {
double projected(const Tensor& out, const std::vector<float>& r) {
  std::vector<float> v = out.to_vector();
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) s += static_cast<double>(v[i]) * r[i];
  return s;
}
/// dL/dx at one element x by central differences: (L(x + eps) - L(x - eps)) / (the step), where `loss`
/// evaluates L with the element's current value; x is put back as it was. Error O(eps²), plus f32
/// rounding of L (about 1e-7 |L| / eps): hence eps = 1e-2, not 1e-8.
double central_difference(const std::function<double()>& loss, float& x, double eps) {
  // BEGIN SOLUTION L02.3
  const float saved = x;
  x = static_cast<float>(saved + eps);
  const double up = loss();
  x = static_cast<float>(saved - eps);
  const double down = loss();
  x = saved;
  // The actual step is what f32 could represent, not eps itself.
  const double step = static_cast<double>(static_cast<float>(saved + eps)) - static_cast<float>(saved - eps);
  return (up - down) / step;
  // END SOLUTION
}
}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, std::vector<Tensor> inputs,
                          const GradcheckOptions& opt) {
  for (auto& in : inputs)
    if (in.requires_grad() && (in.dtype() != DType::f32 || !in.is_contiguous() || !in.is_leaf()))
      throw std::invalid_argument("gradcheck: inputs to check must be contiguous f32 leaves, got " + in.describe());

  // Analytic: dL/dx for L = Σ out ⊙ r, by backward (into .grad) or by grad (returned).
  for (auto& in : inputs)
    if (in.requires_grad() && !opt.via_grad) in.set_grad(Tensor());
  Tensor out = fn(inputs);
  Generator gen(opt.seed);
  std::vector<float> r(static_cast<std::size_t>(out.numel()));
  for (auto& x : r) x = gen.next_normal();
  Tensor r_tensor = Tensor::from_vector(r, out.shape());
  std::vector<Tensor> analytic_grads(inputs.size());
  if (opt.via_grad) {
    std::vector<Tensor> checked;
    for (auto& in : inputs)
      if (in.requires_grad()) checked.push_back(in);
    std::vector<Tensor> g = grad({out}, checked, {r_tensor});
    for (std::size_t k = 0, j = 0; k < inputs.size(); ++k)
      if (inputs[k].requires_grad()) analytic_grads[k] = g[j++];
  } else {
    backward(out, r_tensor);
    for (std::size_t k = 0; k < inputs.size(); ++k)
      if (inputs[k].requires_grad()) analytic_grads[k] = inputs[k].grad();
  }

  GradcheckResult result;
  std::ostringstream rep;
  NoGradGuard no_grad;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Tensor& in = inputs[k];
    if (!in.requires_grad()) continue;
    if (!analytic_grads[k].defined()) {
      result.ok = false;
      rep << "input " << k << ": no gradient reached it\n";
      continue;
    }
    std::vector<float> analytic = analytic_grads[k].to_vector();
    float* x = in.data<float>();
    double worst = 0;
    int failures = 0;
    for (std::int64_t i = 0; i < in.numel(); ++i) {
      const double numeric = central_difference([&] { return projected(fn(inputs), r); }, x[i], opt.eps);
      double err = std::abs(numeric - analytic[static_cast<std::size_t>(i)]);
      worst = std::max(worst, err);
      if (err > opt.atol + opt.rtol * std::abs(numeric)) {
        result.ok = false;
        if (failures++ < 5)
          rep << "input " << k << " element " << i << ": analytic " << analytic[static_cast<std::size_t>(i)]
              << " numeric " << numeric << "\n";
      }
    }
    rep << "input " << k << " " << shape_str(in.shape()) << ": max |analytic - numeric| = " << worst << "\n";
    result.max_abs_error = std::max(result.max_abs_error, worst);
  }
  result.report = rep.str();
  return result;
}

}  // namespace minitorch::autograd
