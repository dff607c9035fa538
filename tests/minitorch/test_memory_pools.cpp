// The simulated accelerator's pool (docs/design.md §10): sim's bytes are accounted apart from the host's,
// a capacity refuses an allocation before anything is allocated, and every copy between the pools is
// counted once, by direction and purpose. The ledger is process-wide: each test sets and clears its own
// capacity and compares deltas.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "minitorch/allocator.h"
#include "minitorch/events.h"
#include "minitorch/ops.h"
#include "minitorch/tensor.h"

using namespace minitorch;

namespace {
/// Clears sim's capacity when the test ends, whatever happens.
struct Capacity {
  explicit Capacity(std::int64_t bytes) { set_memory_capacity(Device::sim(), bytes); }
  ~Capacity() { set_memory_capacity(Device::sim(), 0); }
};
}  // namespace

TEST(L10_MemoryPools, SimBytesAreAccountedApartFromTheHost) {
  const MemoryStats host0 = memory_stats(Device::cpu()), sim0 = memory_stats(Device::sim());
  {
    TagScope scope(MemTag::grad);
    Tensor t = Tensor::zeros({1000}, DType::f32, Device::sim());
    EXPECT_EQ(memory_stats(Device::sim()).current(MemTag::grad) - sim0.current(MemTag::grad), 4000);
    EXPECT_EQ(memory_stats(Device::cpu()).current_total, host0.current_total) << "nothing on the host";
    // A kernel's output lives in its inputs' pool.
    Tensor y = ops::mul(t, t);
    EXPECT_TRUE(y.device().is_sim());
    EXPECT_EQ(memory_stats(Device::cpu()).current_total, host0.current_total);
  }
  EXPECT_EQ(memory_stats(Device::sim()).current_total, sim0.current_total);
}

TEST(L10_MemoryPools, ACapacityRefusesTheAllocationThatWouldExceedItAndCountsNothing) {
  const std::int64_t in_use = memory_stats(Device::sim()).current_total;
  Capacity cap(in_use + 4096);
  TagScope scope(MemTag::activation);
  Tensor fits = Tensor::empty({1024}, DType::f32, Device::sim());  // exactly the capacity
  try {
    Tensor more = Tensor::empty({1}, DType::f32, Device::sim());
    ADD_FAILURE() << "4 bytes beyond the capacity were allocated";
  } catch (const OutOfMemory& e) {
    EXPECT_TRUE(e.device.is_sim());
    EXPECT_EQ(e.tag, MemTag::activation);
    EXPECT_EQ(e.requested, 4);
    EXPECT_EQ(e.capacity, in_use + 4096);
    EXPECT_EQ(e.in_use.current_total, in_use + 4096);
    EXPECT_NE(std::string(e.what()).find("out of memory on sim"), std::string::npos) << e.what();
  }
  EXPECT_EQ(memory_stats(Device::sim()).current_total, in_use + 4096) << "the refused bytes were counted";
  Tensor on_host = Tensor::empty({100000}, DType::f32, Device::cpu());  // the host has no capacity
  EXPECT_EQ(memory_capacity(Device::cpu()), 0);
  EXPECT_THROW(set_memory_capacity(Device::sim(), -1), std::invalid_argument);
}

TEST(L10_MemoryPools, EveryCopyBetweenThePoolsIsCountedOnceByDirectionAndPurpose) {
  Tensor host = Tensor::arange(256).to(DType::f32);  // 1024 bytes
  TransferStats t0 = transfer_stats();
  Tensor dev = host.to(Device::sim());
  TransferStats t1 = transfer_stats();
  EXPECT_EQ(t1.h2d - t0.h2d, 1024);
  EXPECT_EQ(t1.d2h - t0.d2h, 0);
  EXPECT_EQ(dev.to_vector(), host.to_vector());
  Tensor back = dev.to(Device::cpu());
  TransferStats t2 = transfer_stats();
  EXPECT_EQ(t2.d2h - t1.d2h, 1024);
  // A cross-device copy_ of the same dtype moves the bytes straight, once; of another dtype, the source's
  // bytes first (then the conversion runs on the destination).
  Tensor half = Tensor::zeros({256}, DType::bf16, Device::sim());
  half.copy_(host.to(DType::bf16));
  TransferStats t3 = transfer_stats();
  EXPECT_EQ(t3.h2d - t2.h2d, 512);
  half.copy_(host);
  TransferStats t4 = transfer_stats();
  EXPECT_EQ(t4.h2d - t3.h2d, 1024);
  {
    TransferScope io(TransferPurpose::io);  // the run's input: counted apart
    Tensor batch = host.to(Device::sim());
  }
  TransferStats t5 = transfer_stats();
  EXPECT_EQ(t5.io_h2d - t4.io_h2d, 1024);
  EXPECT_EQ(t5.h2d, t4.h2d);
  // The trace sees a transfer span per copy.
  events::Recorder rec;
  {
    events::Attach on(rec);
    TagScope scope(MemTag::param);
    Tensor p = host.to(Device::sim());
  }
  int spans = 0;
  for (const events::Event& e : rec.events())
    if (e.category == events::Category::transfer && e.kind == events::Kind::begin) {
      ++spans;
      EXPECT_EQ(e.name, "h2d");
      EXPECT_EQ(e.bytes, 1024);
    }
  EXPECT_EQ(spans, 1);
}

TEST(L10_MemoryPools, DeviceNamesParseAndPrint) {
  EXPECT_TRUE(Device::parse("sim").is_sim());
  EXPECT_EQ(Device::sim().str(), "sim");
  EXPECT_TRUE(Device::sim().is_host_memory());
  EXPECT_FALSE(Device::cuda(0).is_host_memory());
  try {
    Device::parse("gpu");
    ADD_FAILURE() << "gpu parsed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("(valid: cpu, sim, cuda, cuda:N)"), std::string::npos) << e.what();
  }
}

TEST(L10_MemoryPools, ALinkBandwidthHoldsEachCopyForBytesOverRate) {
  // 1 MB at 50 MB/s: at least 20 ms each way (the memcpy itself takes microseconds); none without a rate.
  Tensor host = Tensor::zeros({250'000}, DType::f32, Device::cpu());
  auto seconds = [&](auto&& copy) {
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  set_link_bandwidth(Device::sim(), 50e6);
  EXPECT_EQ(link_bandwidth(Device::sim()), 50e6);
  Tensor dev;
  EXPECT_GE(seconds([&] { dev = host.to(Device::sim()); }), 0.020) << "h2d";
  EXPECT_GE(seconds([&] { Tensor back = dev.to(Device::cpu()); }), 0.020) << "d2h";
  set_link_bandwidth(Device::sim(), 0);
  EXPECT_EQ(link_bandwidth(Device::sim()), 0);
  EXPECT_LT(seconds([&] { Tensor again = host.to(Device::sim()); }), 0.020) << "no rate: no delay";
  EXPECT_THROW(set_link_bandwidth(Device::cpu(), 1e9), std::invalid_argument) << "only sim has a simulated link";
  EXPECT_THROW(set_link_bandwidth(Device::sim(), -1), std::invalid_argument);
}
