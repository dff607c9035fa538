#pragma once
/// \file allocator.h
/// Memory with a purpose attached. Every allocation carries a MemTag; per device the allocator keeps
/// current and peak bytes per tag. This is how tests prove the ZeRO memory formulas to the byte.
///
/// \code
///   {
///     minitorch::TagScope scope(minitorch::MemTag::param);
///     auto w = minitorch::Tensor::zeros({768, 768});   // 2'359'296 bytes counted as "param"
///   }
///   auto s = minitorch::memory_stats();                 // s.current(MemTag::param), s.peak(...)
/// \endcode
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "minitorch/device.h"

namespace minitorch {

/// What an allocation is for (docs/design.md §3). `optim_temp`: what the optimizer step allocates
/// and frees within the step (the f32 gradient of one tile, zero/tiled_step.h), bounded at ZeRO-3 by
/// sub_group_size — not a model state, so it is kept apart from `optim`.
enum class MemTag : std::uint8_t { param, grad, optim, optim_temp, activation, comm, other };
inline constexpr int kNumMemTags = 7;
/// "param", "grad", "optim", "optim_temp", "activation", "comm", "other".
const char* tag_name(MemTag tag);

/// Current and peak bytes per tag on one device. `peak_total` is the peak of the sum, which is
/// not the sum of the per-tag peaks.
struct MemoryStats {
  std::array<std::int64_t, kNumMemTags> current_bytes{};
  std::array<std::int64_t, kNumMemTags> peak_bytes{};
  std::int64_t current_total = 0;
  std::int64_t peak_total = 0;
  std::int64_t current(MemTag t) const { return current_bytes[static_cast<int>(t)]; }
  std::int64_t peak(MemTag t) const { return peak_bytes[static_cast<int>(t)]; }
};

/// Sets the tag of every allocation made on this thread while it lives; restores the previous tag.
class TagScope {
 public:
  explicit TagScope(MemTag tag);
  ~TagScope();
  TagScope(const TagScope&) = delete;
  TagScope& operator=(const TagScope&) = delete;

 private:
  MemTag previous_;
};
/// The tag new allocations on this thread get (MemTag::other outside any TagScope).
MemTag current_tag();

/// Raw memory for one device type. The CPU one is built in; the CUDA layer registers its own.
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  virtual void* allocate(std::size_t bytes, int device_index) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes, int device_index) = 0;
  /// Byte copies between this device and host memory (for Tensor::to(Device)).
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes, int device_index) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t bytes, int device_index) = 0;
};
/// Installs the allocator for a device type (the CUDA layer calls this once at start-up).
void register_device_allocator(DeviceType type, DeviceAllocator* allocator);
/// The allocator for a device type; throws std::runtime_error if none is registered.
DeviceAllocator& device_allocator(DeviceType type);

/// Bytes the CPU allocator keeps cached for reuse (freed blocks of 1 MiB and more; counted in no tag).
std::size_t cpu_cached_bytes();
/// Returns the CPU allocator's cached blocks to the OS (like torch.cuda.empty_cache()).
void cpu_empty_cache();

/// The most bytes `device`'s pool may hold (accounted bytes: what its tensors hold, not the allocator's
/// cache); 0 = no limit (the default). How `sim` stands in for a 24 GB GPU (docs/design.md §10).
void set_memory_capacity(Device device, std::int64_t bytes);
std::int64_t memory_capacity(Device device);
/// sim's host↔device link: every copy_between to or from `device` (a sim device) takes at least
/// bytes ÷ `bytes_per_second` (the copy itself is a memcpy, far faster than PCIe), so a step's time shows
/// what its transfers would cost on a real link. 0 = no delay (the default). std::invalid_argument for a
/// device other than sim or a negative rate.
void set_link_bandwidth(Device device, double bytes_per_second);
double link_bandwidth(Device device);

/// An allocation the pool's capacity cannot hold: nothing was allocated. The fields say what was asked
/// and what the pool held; the runtime adds the run's formula and its levers (runtime/out_of_memory.h).
class OutOfMemory : public std::runtime_error {
 public:
  OutOfMemory(Device device, MemTag tag, std::int64_t requested, std::int64_t capacity, const MemoryStats& in_use);
  Device device;
  MemTag tag;
  std::int64_t requested, capacity;
  MemoryStats in_use;
};

/// What a copy between host and device memory carries: model states and everything the strategies move
/// (`model`), or the run's input and output — data batches going up, the loss coming down (`io`). The
/// report counts them apart, so offload's formulas hold to the byte (docs/report.md).
enum class TransferPurpose : std::uint8_t { model, io };
/// Sets the purpose of the copies made on this thread while it lives.
class TransferScope {
 public:
  explicit TransferScope(TransferPurpose purpose);
  ~TransferScope();
  TransferScope(const TransferScope&) = delete;
  TransferScope& operator=(const TransferScope&) = delete;

 private:
  TransferPurpose previous_;
};
/// Bytes copied host to device (h2d) and device to host (d2h) since the process started, by purpose; and
/// bytes read from and written to disk by ZeRO-Infinity's swap (zero/nvme_store.h).
struct TransferStats {
  std::int64_t h2d = 0, d2h = 0, io_h2d = 0, io_d2h = 0;
  std::int64_t disk_read = 0, disk_write = 0;
};
TransferStats transfer_stats();
/// One read from or write to disk of `bytes` bytes (the NVMe swap): counted in TransferStats at once, and
/// reported to the event sink as a `transfer` span named "disk_read" / "disk_write" while it lives.
class DiskTransfer {
 public:
  DiskTransfer(bool writing, std::int64_t bytes);
  ~DiskTransfer();
  DiskTransfer(const DiskTransfer&) = delete;
  DiskTransfer& operator=(const DiskTransfer&) = delete;

 private:
  bool writing_;
  std::int64_t bytes_;
  std::uint64_t id_ = 0;  // the span's, when traced
};
/// The one function through which bytes cross between host memory and a device (Tensor::to calls it):
/// copies `bytes` from `src` on `from` to `dst` on `to` (one of them the host, `cpu`), counts them as h2d or
/// d2h under this thread's TransferScope, and reports a `transfer` span to the event sink. `tag`: what the
/// bytes are (the tag of the tensor moved).
void copy_between(void* dst, Device to, const void* src, Device from, std::size_t bytes, MemTag tag);

/// Accounting for one device (snapshot).
MemoryStats memory_stats(Device device = Device::cpu());
/// The highest total bytes in use on `device` since the last call (the first call: the total now), and a new
/// period starts at the current total. A watermark of its own, apart from the peaks above (which the run report
/// keeps for the whole step): Gemini's warm-up measures each period between two hooks with it.
std::int64_t take_period_peak(Device device);
/// Sets every peak to the current value (call before the phase you want to measure).
void reset_peak_memory(Device device = Device::cpu());
/// Called by Storage on allocation / release; moves `bytes` into / out of `tag` on `device`.
/// account_alloc throws OutOfMemory (and counts nothing) when the pool's capacity cannot hold them.
/// `block` names the allocation in the memory event (Storage::block_id(): 0 = unnamed).
void account_alloc(Device device, MemTag tag, std::int64_t bytes, std::uint64_t block = 0);
void account_free(Device device, MemTag tag, std::int64_t bytes, std::uint64_t block = 0);
/// One line per tag with current and peak, for logs.
std::string memory_report(Device device = Device::cpu());

}  // namespace minitorch
