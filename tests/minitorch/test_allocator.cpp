// L01 — tagged memory accounting: every allocation lands in exactly one tag, frees give it back,
// peaks survive frees until reset, TagScope nests, retag moves bytes, views allocate nothing.
// The ledger is process-wide, so every test compares deltas against a snapshot.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>

#include "minitorch/allocator.h"
#include "minitorch/storage.h"
#include "minitorch/tensor.h"

using namespace minitorch;

namespace {

constexpr MemTag kAllTags[] = {MemTag::param,      MemTag::grad, MemTag::optim, MemTag::optim_temp,
                               MemTag::activation, MemTag::comm, MemTag::other};

/// current(tag) now minus current(tag) in `before`, for every tag.
std::array<std::int64_t, kNumMemTags> deltas(const MemoryStats& before) {
  MemoryStats now = memory_stats();
  std::array<std::int64_t, kNumMemTags> d{};
  for (int t = 0; t < kNumMemTags; ++t) d[t] = now.current_bytes[t] - before.current_bytes[t];
  return d;
}

/// Expects exactly `bytes` more in `tag` and no change anywhere else.
void expect_only(const MemoryStats& before, MemTag tag, std::int64_t bytes) {
  auto d = deltas(before);
  for (MemTag t : kAllTags)
    EXPECT_EQ(d[static_cast<int>(t)], t == tag ? bytes : 0) << "tag " << tag_name(t);
  EXPECT_EQ(memory_stats().current_total - before.current_total, bytes);
}

}  // namespace

TEST(L01_Allocator, TagNames) {
  EXPECT_STREQ(tag_name(MemTag::param), "param");
  EXPECT_STREQ(tag_name(MemTag::grad), "grad");
  EXPECT_STREQ(tag_name(MemTag::optim), "optim");
  EXPECT_STREQ(tag_name(MemTag::optim_temp), "optim_temp");
  EXPECT_STREQ(tag_name(MemTag::activation), "activation");
  EXPECT_STREQ(tag_name(MemTag::comm), "comm");
  EXPECT_STREQ(tag_name(MemTag::other), "other");
}

TEST(L01_Allocator, TaggedAllocationMovesExactlyItsBytesIntoItsTag) {
  for (MemTag tag : kAllTags) {
    MemoryStats before = memory_stats();
    {
      TagScope scope(tag);
      Tensor t = Tensor::empty({10, 7});  // 280 bytes, not rounded up to the 64-byte alignment
      expect_only(before, tag, 280);
      Tensor h = Tensor::zeros({3, 5}, DType::bf16);  // 30 bytes
      expect_only(before, tag, 310);
    }
    expect_only(before, tag, 0);  // freeing returns them
  }
}

TEST(L01_Allocator, UntaggedAllocationsAreOther) {
  EXPECT_EQ(current_tag(), MemTag::other);
  MemoryStats before = memory_stats();
  Tensor t = Tensor::ones({16});
  expect_only(before, MemTag::other, 64);
  EXPECT_EQ(t.storage()->tag(), MemTag::other);
}

TEST(L01_Allocator, StorageRemembersItsTagAfterTheScope) {
  Tensor t;
  {
    TagScope scope(MemTag::optim);
    t = Tensor::zeros({8});
  }
  EXPECT_EQ(t.storage()->tag(), MemTag::optim);
  MemoryStats before = memory_stats();
  t = Tensor();  // freed outside the scope: still leaves `optim`
  expect_only(before, MemTag::optim, -32);
}

TEST(L01_Allocator, PeakIsKeptAfterFree) {
  reset_peak_memory();
  MemoryStats before = memory_stats();
  {
    TagScope scope(MemTag::activation);
    Tensor big = Tensor::empty({1024, 256});  // 1 MiB
  }
  MemoryStats after = memory_stats();
  EXPECT_EQ(after.current(MemTag::activation), before.current(MemTag::activation));
  EXPECT_EQ(after.peak(MemTag::activation), before.current(MemTag::activation) + (1 << 20));
  EXPECT_EQ(after.peak_total, before.current_total + (1 << 20));
  EXPECT_EQ(after.peak(MemTag::param), before.peak(MemTag::param));
}

TEST(L01_Allocator, PeakTotalIsPeakOfTheSumNotSumOfPeaks) {
  reset_peak_memory();
  MemoryStats before = memory_stats();
  {
    TagScope s(MemTag::param);
    Tensor a = Tensor::empty({100});  // 400 bytes, freed before b
  }
  {
    TagScope s(MemTag::grad);
    Tensor b = Tensor::empty({50});  // 200 bytes
  }
  MemoryStats m = memory_stats();
  EXPECT_EQ(m.peak(MemTag::param) - before.current(MemTag::param), 400);
  EXPECT_EQ(m.peak(MemTag::grad) - before.current(MemTag::grad), 200);
  EXPECT_EQ(m.peak_total - before.current_total, 400);  // never both at once
  {
    TagScope s(MemTag::param);
    Tensor a = Tensor::empty({100});
    TagScope s2(MemTag::grad);
    Tensor b = Tensor::empty({50});
    EXPECT_EQ(memory_stats().peak_total - before.current_total, 600);
  }
}

TEST(L01_Allocator, ResetPeakMemorySetsPeaksToCurrent) {
  {
    TagScope scope(MemTag::comm);
    Tensor t = Tensor::empty({4096});
  }
  MemoryStats high = memory_stats();
  EXPECT_GE(high.peak(MemTag::comm), high.current(MemTag::comm) + 16384);
  reset_peak_memory();
  MemoryStats m = memory_stats();
  for (MemTag t : kAllTags) EXPECT_EQ(m.peak(t), m.current(t)) << tag_name(t);
  EXPECT_EQ(m.peak_total, m.current_total);
}

TEST(L01_Allocator, TagScopeNestingRestoresThePreviousTag) {
  EXPECT_EQ(current_tag(), MemTag::other);
  MemoryStats before = memory_stats();
  Tensor a, b, c;
  {
    TagScope outer(MemTag::param);
    EXPECT_EQ(current_tag(), MemTag::param);
    {
      TagScope inner(MemTag::grad);
      EXPECT_EQ(current_tag(), MemTag::grad);
      b = Tensor::empty({2});  // 8 bytes grad
      {
        TagScope innermost(MemTag::param);  // the same tag again
        EXPECT_EQ(current_tag(), MemTag::param);
      }
      EXPECT_EQ(current_tag(), MemTag::grad);
    }
    EXPECT_EQ(current_tag(), MemTag::param);
    a = Tensor::empty({4});  // 16 bytes param
  }
  EXPECT_EQ(current_tag(), MemTag::other);
  c = Tensor::empty({1});  // 4 bytes other
  auto d = deltas(before);
  EXPECT_EQ(d[static_cast<int>(MemTag::param)], 16);
  EXPECT_EQ(d[static_cast<int>(MemTag::grad)], 8);
  EXPECT_EQ(d[static_cast<int>(MemTag::other)], 4);
}

TEST(L01_Allocator, TagScopeIsPerThread) {
  TagScope scope(MemTag::param);
  MemTag seen = MemTag::param;
  std::thread th([&] { seen = current_tag(); });
  th.join();
  EXPECT_EQ(seen, MemTag::other);
  EXPECT_EQ(current_tag(), MemTag::param);
}

TEST(L01_Allocator, RetagMovesBytesBetweenTags) {
  Tensor t;
  {
    TagScope scope(MemTag::activation);
    t = Tensor::empty({25});  // 100 bytes
  }
  MemoryStats before = memory_stats();
  t.storage()->retag(MemTag::grad);
  EXPECT_EQ(t.storage()->tag(), MemTag::grad);
  auto d = deltas(before);
  EXPECT_EQ(d[static_cast<int>(MemTag::activation)], -100);
  EXPECT_EQ(d[static_cast<int>(MemTag::grad)], 100);
  EXPECT_EQ(memory_stats().current_total, before.current_total);
  t.storage()->retag(MemTag::grad);  // no-op
  EXPECT_EQ(deltas(before)[static_cast<int>(MemTag::grad)], 100);
  t = Tensor();  // freed from its new tag
  d = deltas(before);
  EXPECT_EQ(d[static_cast<int>(MemTag::grad)], 0);
  EXPECT_EQ(d[static_cast<int>(MemTag::activation)], -100);
}

TEST(L01_Allocator, ViewsDoNotAllocate) {
  TagScope scope(MemTag::activation);
  Tensor x = Tensor::zeros({4, 6});
  MemoryStats before = memory_stats();
  {
    Tensor v1 = x.transpose(0, 1);
    Tensor v2 = x.permute({1, 0});
    Tensor v3 = x.narrow(1, 2, 3);
    Tensor v4 = x.view({2, 12});
    Tensor v5 = x.reshape({24});  // contiguous: a view
    Tensor v6 = x.unsqueeze(0).expand({3, 4, 6});
    Tensor v7 = x.detach();
    Tensor v8 = x.contiguous();
    Tensor v9 = x.unsqueeze(2).squeeze(2);
    expect_only(before, MemTag::activation, 0);
    EXPECT_EQ(memory_stats().peak_total, before.peak_total);
  }
  expect_only(before, MemTag::activation, 0);
  // copies do allocate, exactly their bytes, under the current tag
  Tensor c = x.transpose(0, 1).contiguous();
  expect_only(before, MemTag::activation, 96);
  Tensor h = x.to(DType::bf16);
  expect_only(before, MemTag::activation, 96 + 48);
}

TEST(L01_Allocator, StorageKeepsMemoryUntilTheLastViewDies) {
  MemoryStats before = memory_stats();
  Tensor v;
  {
    TagScope scope(MemTag::param);
    Tensor x = Tensor::zeros({10});
    v = x.narrow(0, 2, 3);
  }
  expect_only(before, MemTag::param, 40);  // the whole storage, kept by the view
  v = Tensor();
  expect_only(before, MemTag::param, 0);
}

TEST(L01_Allocator, ZeroByteTensorsCountNothing) {
  MemoryStats before = memory_stats();
  TagScope scope(MemTag::param);
  Tensor t = Tensor::empty({0, 16});
  expect_only(before, MemTag::param, 0);
  EXPECT_EQ(t.storage()->nbytes(), 0u);
}

TEST(L01_Allocator, StorageAllocateWithExplicitTag) {
  MemoryStats before = memory_stats();
  auto s = Storage::allocate(123, Device::cpu(), MemTag::comm);
  expect_only(before, MemTag::comm, 123);
  EXPECT_EQ(s->nbytes(), 123u);
  EXPECT_NE(s->data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(s->data()) % 64, 0u);  // cache-line aligned
  s.reset();
  expect_only(before, MemTag::comm, 0);
}

TEST(L01_Allocator, MemoryReportNamesEveryTag) {
  std::string r = memory_report();
  for (MemTag t : kAllTags) EXPECT_NE(r.find(tag_name(t)), std::string::npos) << r;
  EXPECT_NE(r.find("cpu"), std::string::npos);
}

TEST(L01_Allocator, CpuAllocatorCannotBeReplaced) {
  EXPECT_THROW(register_device_allocator(DeviceType::cpu, nullptr), std::invalid_argument);
}

// The CPU allocator caches freed blocks of 1 MiB and more (rounded up to whole MiB) and hands them
// out again: the cache is invisible to the tags, and empty_cache returns it.
TEST(L01_AllocatorCache, LargeBlocksAreReusedAndNotCounted) {
  using namespace minitorch;
  cpu_empty_cache();
  const Shape shape{3, 1 << 18};  // 3 MiB of f32
  auto before = memory_stats();
  void* first = nullptr;
  {
    Tensor a = Tensor::empty(shape);
    first = a.raw_data();
    EXPECT_EQ(memory_stats().current_total - before.current_total, 3 << 20);
  }
  EXPECT_EQ(memory_stats().current_total, before.current_total) << "a cached block counts in no tag";
  EXPECT_EQ(cpu_cached_bytes(), std::size_t{3} << 20);
  {
    Tensor b = Tensor::empty({(3 << 18) - 100});  // rounds up to the same 3 MiB block
    EXPECT_EQ(b.raw_data(), first);
    EXPECT_EQ(cpu_cached_bytes(), 0u);
  }
  Tensor small = Tensor::empty({1000});  // below 1 MiB: never cached
  small = Tensor();
  EXPECT_EQ(cpu_cached_bytes(), std::size_t{3} << 20);
  cpu_empty_cache();
  EXPECT_EQ(cpu_cached_bytes(), 0u);
}
