// The backend registry: the CPU kernels are built in; a device without kernels gives a clear error.
#include "minitorch/backend.h"
#include "minitorch/cpu_backend.h"
#include "test_ops_util.h"

using namespace ops_test;

TEST(L01_OpsBackend, CpuIsBuiltInAndCudaNeedsRegistration) {
  EXPECT_STREQ(minitorch::backend(minitorch::Device::cpu()).name(), "cpu");
  EXPECT_EQ(&minitorch::backend(minitorch::Device::cpu()), &minitorch::cpu_backend());
  bool cuda_registered = true;
  try {
    minitorch::backend(minitorch::Device::cuda(0));
  } catch (const std::runtime_error& e) {
    cuda_registered = false;
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no kernels for cuda:0"));
  }
  if (cuda_registered) GTEST_SKIP() << "this build registers CUDA kernels";
}

TEST(L01_OpsBackend, RegisteredBackendReceivesTheCalls) {
  // A test double that counts softmax calls stands in for the CPU kernels, then is removed.
  struct Counting : minitorch::cpu::CpuBackend {
    int softmax_calls = 0;
    Tensor softmax(const Tensor& x) override {
      ++softmax_calls;
      return CpuBackend::softmax(x);
    }
  } counting;
  // Unregistered on every way out, a throw included (a lab's softmax stub): `counting` dies with this
  // test, and a later test calling through it would crash.
  struct Registered {
    explicit Registered(minitorch::Backend* kernels) { minitorch::register_backend(minitorch::DeviceType::cpu, kernels); }
    ~Registered() { minitorch::register_backend(minitorch::DeviceType::cpu, nullptr); }  // the built-in kernels
  };
  Tensor x = Tensor::from_vector({0.f, 0.f}, {1, 2});
  Tensor y;
  {
    Registered registered(&counting);
    y = ops::softmax(x);
  }
  EXPECT_EQ(counting.softmax_calls, 1);
  EXPECT_TRUE(all_close(y, {0.5f, 0.5f}, 0, 0));
  ops::softmax(x);
  EXPECT_EQ(counting.softmax_calls, 1);
  EXPECT_EQ(&minitorch::backend(minitorch::Device::cpu()), &minitorch::cpu_backend());
}
