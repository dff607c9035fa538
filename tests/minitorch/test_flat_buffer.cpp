// FlatBuffer: tensors end to end in one buffer, padded to a multiple of N, split into N equal shards.
#include <gtest/gtest.h>

#include "minitorch/allocator.h"
#include "minitorch/flat_buffer.h"
#include "test_util.h"

using namespace minitorch;

TEST(L05_FlatBuffer, LaysSlotsEndToEndAndPadsToAMultipleOfN) {
  FlatBuffer f({{3, 2}, {5}}, DType::f32, /*align=*/4, MemTag::comm);
  EXPECT_EQ(f.size(), 2u);
  EXPECT_EQ(f.used(), 11);
  EXPECT_EQ(f.numel(), 12);
  EXPECT_EQ(f.padding(), 1);
  EXPECT_EQ(f.padding_bytes(), 4);
  EXPECT_EQ(f.slot(0), (FlatBuffer::Range{0, 6}));
  EXPECT_EQ(f.slot(1), (FlatBuffer::Range{6, 11}));
  EXPECT_EQ(f.view(0).shape(), (Shape{3, 2}));
  EXPECT_EQ(f.view(1).shape(), (Shape{5}));
  // bf16, no padding needed: 8 elements on 4 ranks.
  FlatBuffer g({{8}}, DType::bf16, 4, MemTag::grad);
  EXPECT_EQ(g.padding(), 0);
  EXPECT_EQ(g.flat().nbytes(), 16u);
}

TEST(L05_FlatBuffer, ViewsShareTheBufferAndPaddingStaysZero) {
  FlatBuffer f({{2, 2}, {3}}, DType::f32, 3, MemTag::other);  // 7 used, 9 in all
  f.view(0).copy_(Tensor::from_vector({1, 2, 3, 4}, {2, 2}));
  f.view(1).fill_(7.f);
  EXPECT_EQ(f.flat().to_vector(), (std::vector<float>{1, 2, 3, 4, 7, 7, 7, 0, 0}));
  EXPECT_EQ(f.view(1).storage(), f.flat().storage());
}

TEST(L05_FlatBuffer, ShardsAreEqualContiguousRangesAndOverlapsCutSlots) {
  FlatBuffer f({{3, 2}, {5}}, DType::f32, 4, MemTag::other);  // 12 elements, shards of 3
  EXPECT_EQ(f.shard(0), (FlatBuffer::Range{0, 3}));
  EXPECT_EQ(f.shard(3), (FlatBuffer::Range{9, 12}));
  EXPECT_EQ(f.shard_view(2).numel(), 3);
  EXPECT_EQ(f.overlap(0, 1), (FlatBuffer::Range{3, 6}));   // slot 0 = [0, 6)
  EXPECT_EQ(f.overlap(1, 1).size(), 0);                    // slot 1 = [6, 11) misses [3, 6)
  EXPECT_EQ(f.overlap(1, 2), (FlatBuffer::Range{6, 9}));
  EXPECT_EQ(f.overlap(1, 3), (FlatBuffer::Range{9, 11}));  // the padding element 11 is nobody's slot
  EXPECT_EQ(f.shard(1, 2), (FlatBuffer::Range{6, 12}));
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([&] { f.shard(0, 5); }), "split evenly"));
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([] { FlatBuffer({{1}}, DType::f32, 0, MemTag::other); }), "align"));
}

TEST(L05_FlatBuffer, AllocatesExactlyPaddedBytesUnderItsTag) {
  const std::int64_t before = memory_stats().current(MemTag::comm);
  {
    FlatBuffer f({{10}, {7}}, DType::f32, 4, MemTag::comm);  // 17 → 20 elements
    EXPECT_EQ(memory_stats().current(MemTag::comm) - before, 20 * 4);
  }
  EXPECT_EQ(memory_stats().current(MemTag::comm), before);
}
