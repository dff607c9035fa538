#pragma once
/// \file gradcheck_helpers.h
/// Shared helpers for the finite-difference (Jacobian) checks of the autograd tests.
///
/// \code
///   Generator gen(1);
///   Tensor x = rand_leaf({3, 4}, gen);
///   EXPECT_GRADCHECK([](const Inputs& in) { return ag::gelu(in[0]); }, {x});
/// \endcode
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"

namespace mt_test {

using minitorch::Generator;
using minitorch::Shape;
using minitorch::Tensor;
using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

/// A leaf with U[low, high) entries that requires grad (contiguous f32, as gradcheck wants).
inline Tensor rand_leaf(const Shape& shape, Generator& gen, float low = -1.f, float high = 1.f) {
  Tensor t = Tensor::uniform(shape, gen, low, high);
  t.set_requires_grad();
  return t;
}

/// A leaf with N(0, 1) entries that requires grad.
inline Tensor randn_leaf(const Shape& shape, Generator& gen) {
  Tensor t = Tensor::randn(shape, gen);
  t.set_requires_grad();
  return t;
}

/// Values with |x| >= min_abs (away from a kink or a pole), random signs unless positive.
inline Tensor away_from_zero_leaf(const Shape& shape, Generator& gen, float min_abs = 0.5f, float max_abs = 1.5f,
                                  bool positive = false) {
  std::vector<float> v(static_cast<std::size_t>(minitorch::shape_numel(shape)));
  for (auto& x : v) {
    x = min_abs + (max_abs - min_abs) * gen.next_float();
    if (!positive && gen.next_below(2) == 0) x = -x;
  }
  Tensor t = Tensor::from_vector(v, shape);
  t.set_requires_grad();
  return t;
}

/// Runs autograd::gradcheck and turns its verdict into a gtest assertion result with the report.
inline ::testing::AssertionResult gradcheck_ok(const Fn& fn, const Inputs& inputs,
                                               const minitorch::autograd::GradcheckOptions& opt = {}) {
  auto r = minitorch::autograd::gradcheck(fn, inputs, opt);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "gradcheck failed (max abs error " << r.max_abs_error << ")\n" << r.report;
}

}  // namespace mt_test

#define EXPECT_GRADCHECK(...) EXPECT_TRUE(::mt_test::gradcheck_ok(__VA_ARGS__))
