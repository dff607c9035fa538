#pragma once
/// \file gradcheck.h
/// Checks backward passes against central finite differences.
///
/// The scalar compared is L(x) = Σ f(x) ⊙ r for a fixed random r (so every output element counts),
/// summed in double. Each input element is nudged by ±eps and the slope (L⁺ - L⁻) / 2eps, computed
/// in double, is compared with the analytic dL/dx from autograd::backward (or autograd::grad).
///
/// \code
///   auto f = [](const std::vector<Tensor>& in) { return autograd::gelu(in[0]); };
///   auto r = autograd::gradcheck(f, {Tensor::randn({3, 4}, gen).set_requires_grad()});
///   EXPECT_TRUE(r.ok) << r.report;
/// \endcode
#include <functional>
#include <string>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch::autograd {

struct GradcheckOptions {
  double eps = 1e-2;   // f32 forward: larger steps keep rounding noise (~1e-7 |L| / eps) small
  double atol = 1e-3;
  double rtol = 1e-2;
  std::uint64_t seed = 12345;  // for the projection r
  bool via_grad = false;       // analytic gradients from autograd::grad instead of backward (no .grad written)
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  std::string report;  // the worst element per input, and the first failures
};

/// `inputs` are f32 leaves; those with requires_grad are checked. `fn` must be deterministic.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, std::vector<Tensor> inputs,
                          const GradcheckOptions& options = {});

}  // namespace minitorch::autograd
