#pragma once
// Shared helpers for the L04 CUDA suites: a fixture that skips with the reason when there is no
// device (or no CUDA in this build), and comparisons of a GPU result with the CPU reference.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "minitorch/tensor.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#endif

namespace mt_cuda_test {
using namespace minitorch;

/// Tolerances per dtype and kind of kernel: |gpu - cpu| <= abs + rel * |cpu|.
struct Tol {
  float rel, abs;
};
inline constexpr Tol kF32Elementwise{1e-5f, 1e-6f};
inline constexpr Tol kF32Reduction{1e-4f, 1e-5f};  // reductions, softmax family, matmul, layernorm
inline constexpr Tol kBf16{1e-2f, 1e-2f};
inline Tol tol_for(DType dt, Tol f32) { return dt == DType::bf16 ? kBf16 : f32; }

/// Every L04 test derives from this: without a usable device the test is skipped with the reason.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if MINITORCH_WITH_CUDA
    std::string why;
    if (!cuda::init(&why)) GTEST_SKIP() << "no CUDA device: " << why;
#else
    GTEST_SKIP() << "no CUDA device: this build has no CUDA layer (nvcc not found or -DMINITORCH_CUDA=OFF)";
#endif
  }
  void TearDown() override { set_naive(false); }

  static void set_naive(bool on) {
#if MINITORCH_WITH_CUDA
    cuda::set_naive_kernels(on);
#else
    (void)on;
#endif
  }
  /// Runs `f` with the fast kernels, then with the naive (teaching) ones.
  static void for_each_variant(const std::function<void(const char*)>& f) {
    set_naive(false);
    f("fast");
    set_naive(true);
    f("naive");
    set_naive(false);
  }
};

inline Tensor gpu(const Tensor& t) { return t.to(Device::cuda()); }
inline Tensor host(const Tensor& t) { return t.to(Device::cpu()); }

/// The GPU tensor matches the CPU one: same shape and dtype, values within `tol`.
inline void expect_close(const Tensor& on_gpu, const Tensor& on_cpu, Tol tol, const std::string& what) {
  ASSERT_TRUE(on_gpu.device().is_cuda()) << what << ": result on " << on_gpu.device().str();
  ASSERT_EQ(on_gpu.shape(), on_cpu.shape()) << what;
  ASSERT_EQ(on_gpu.dtype(), on_cpu.dtype()) << what;
  const std::vector<float> g = host(on_gpu).to_vector(), c = on_cpu.to_vector();
  int bad = 0;
  for (std::size_t i = 0; i < c.size() && bad < 5; ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(c[i]);
    if (!both_nan && !(std::fabs(g[i] - c[i]) <= tol.abs + tol.rel * std::fabs(c[i]))) {
      ADD_FAILURE() << what << ": element " << i << " gpu " << g[i] << " cpu " << c[i];
      ++bad;
    }
  }
}

}  // namespace mt_cuda_test
