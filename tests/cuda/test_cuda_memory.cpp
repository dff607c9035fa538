// L04: the caching device allocator, tagged accounting on the GPU, host <-> device copies.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "minitorch/allocator.h"
#include "minitorch/random.h"

namespace {
using namespace minitorch;
using namespace mt_cuda_test;

class L04_CudaMemory : public CudaTest {};

TEST_F(L04_CudaMemory, RoundTripCopiesAreExact) {
  Generator gen(1);
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor x = Tensor::randn({3, 5, 7}, gen, 0.f, 1.f, dt);
    Tensor back = host(gpu(x));
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_EQ(back.to_vector(), x.to_vector());
  }
  Tensor ids = Tensor::from_ints({3, 1, 4, 1, 5}, {5});
  EXPECT_EQ(host(gpu(ids)).to_int_vector(), ids.to_int_vector());
  Tensor xt = Tensor::randn({4, 6}, gen).transpose(0, 1);  // strided CPU view: made contiguous first
  EXPECT_EQ(host(gpu(xt)).to_vector(), xt.to_vector());
}

TEST_F(L04_CudaMemory, TaggedAccountingMatchesCpuToTheByte) {
  const Device dev = Device::cuda();
  const auto before = memory_stats(dev);
  {
    TagScope scope(MemTag::param);
    Tensor w = Tensor::empty({768, 768}, DType::f32, dev);  // 2'359'296 bytes (the rounding is not counted)
    Tensor b = Tensor::empty({3}, DType::bf16, dev);        // 6 bytes, though the block is 512
    const auto s = memory_stats(dev);
    EXPECT_EQ(s.current(MemTag::param) - before.current(MemTag::param), 768 * 768 * 4 + 6);
  }
  EXPECT_EQ(memory_stats(dev).current(MemTag::param), before.current(MemTag::param));
}

#if MINITORCH_WITH_CUDA
TEST_F(L04_CudaMemory, FreedBlocksAreCachedAndReused) {
  const Device dev = Device::cuda();
  cuda::empty_cache();
  const std::size_t reserved0 = cuda::reserved_bytes(0);
  void* first = nullptr;
  {
    Tensor t = Tensor::empty({1000}, DType::f32, dev);  // 4000 B -> a 4096 B block (512 B granularity)
    first = t.raw_data();
    EXPECT_EQ(cuda::reserved_bytes(0) - reserved0, 4096u);
  }
  EXPECT_EQ(cuda::cached_bytes(0), 4096u);
  {
    Tensor t = Tensor::empty({1020}, DType::f32, dev);  // 4080 B: same rounded size, same block
    EXPECT_EQ(t.raw_data(), first);
    EXPECT_EQ(cuda::cached_bytes(0), 0u);
    Tensor big = Tensor::empty({(3 << 20) / 4}, DType::f32, dev);  // 3 MiB -> 4 MiB (2 MiB granularity)
    EXPECT_EQ(cuda::reserved_bytes(0) - reserved0, 4096u + (4u << 20));
  }
  EXPECT_EQ(cuda::cached_bytes(0), 4096u + (4u << 20));
  cuda::empty_cache();
  EXPECT_EQ(cuda::cached_bytes(0), 0u);
  EXPECT_EQ(cuda::reserved_bytes(0), reserved0);
}

TEST_F(L04_CudaMemory, InitIsIdempotent) {
  std::string why;
  EXPECT_TRUE(cuda::init(&why));
  EXPECT_TRUE(cuda::init(&why));
  EXPECT_GE(cuda::device_count(), 1);
}
#endif

}  // namespace
