#pragma once
/// \file test_ops_util.h
/// Helpers for the ops tests (tests/minitorch/test_ops_*.cpp): random tensors, closeness checks,
/// a thread-count guard, and "expect this call to throw invalid_argument mentioning ...".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "minitorch/dtype.h"
#include "minitorch/ops.h"
#include "minitorch/parallel.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"

namespace ops_test {

using minitorch::DType;
using minitorch::Generator;
using minitorch::Shape;
using minitorch::Tensor;
namespace ops = minitorch::ops;

inline Tensor randn(const Shape& s, Generator& g, DType dt = DType::f32) { return Tensor::randn(s, g, 0.f, 1.f, dt); }
inline Tensor uniform(const Shape& s, Generator& g, float lo, float hi) { return Tensor::uniform(s, g, lo, hi); }

/// bf16 rounding of a float (what storing it in a bf16 tensor does).
inline float round_bf16(float x) { return minitorch::bf16_to_f32(minitorch::f32_to_bf16(x)); }

/// Every element within atol + rtol * |ref|; reports the first few mismatches.
inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& ref,
                                            float atol = 1e-5f, float rtol = 1e-5f) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs reference " << ref.size();
  int bad = 0;
  std::string msg;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float tol = atol + rtol * std::fabs(ref[i]);
    if (!(std::fabs(got[i] - ref[i]) <= tol)) {
      if (bad < 5) msg += " [" + std::to_string(i) + "] " + std::to_string(got[i]) + " vs " + std::to_string(ref[i]);
      ++bad;
    }
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ:" << msg;
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult all_close(const Tensor& got, const std::vector<float>& ref, float atol = 1e-5f,
                                            float rtol = 1e-5f) {
  return all_close(got.to_vector(), ref, atol, rtol);
}

/// Sets the kernel thread count for one scope (tests run with MINITORCH_NUM_THREADS=1).
class Threads {
 public:
  explicit Threads(int n) : saved_(minitorch::num_threads()) { minitorch::set_num_threads(n); }
  ~Threads() { minitorch::set_num_threads(saved_); }

 private:
  int saved_;
};

/// Row-major strides of a shape, as plain numbers for reference loops.
inline std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

}  // namespace ops_test

/// EXPECT that `stmt` throws std::invalid_argument whose message contains every given substring.
#define EXPECT_INVALID_ARG(stmt, ...)                                                           \
  do {                                                                                          \
    try {                                                                                       \
      stmt;                                                                                     \
      ADD_FAILURE() << "expected std::invalid_argument from " #stmt;                            \
    } catch (const std::invalid_argument& e) {                                                  \
      for (const char* s : {__VA_ARGS__}) EXPECT_THAT(e.what(), ::testing::HasSubstr(s));       \
    }                                                                                           \
  } while (0)
