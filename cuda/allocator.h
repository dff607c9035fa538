#pragma once
/// \file allocator.h
/// The caching device allocator (the idea of PyTorch's CUDACachingAllocator, without streams or
/// block splitting). cudaMalloc and cudaFree synchronise the device and cost tens of microseconds,
/// so a freed block is kept in a free list keyed by its rounded size and handed out again:
///
///     request            rounded to             pool
///     <= 1 MiB           a multiple of 512 B    small
///     >  1 MiB           a multiple of 2 MiB    large
///
/// Only exact rounded sizes are reused (no splitting), so a training step that allocates the same
/// shapes every iteration reaches a steady state with no cudaMalloc at all. On out-of-memory the
/// cache is emptied and the cudaMalloc retried once.
///
/// Tagged accounting (param / grad / optim / ...) is not done here: Storage does it for every device
/// with the requested byte counts, so the numbers on the GPU are the CPU's, to the byte. The
/// rounding and the cache show up only in cached_bytes() / reserved_bytes().
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "minitorch/allocator.h"

namespace minitorch::cuda {

/// 512 B or 2 MiB granularity (see the table above).
std::size_t round_size(std::size_t bytes);

class CachingAllocator : public DeviceAllocator {
 public:
  void* allocate(std::size_t bytes, int device_index) override;
  void deallocate(void* ptr, std::size_t bytes, int device_index) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes, int device_index) override;
  void copy_from_host(void* dst, const void* host_src, std::size_t bytes, int device_index) override;

  std::size_t cached_bytes(int device) const;    // -1: all devices
  std::size_t reserved_bytes(int device) const;  // -1: all devices
  void empty_cache();

 private:
  struct Pool {
    std::map<std::size_t, std::vector<void*>> free;  // rounded size -> cached blocks
    std::size_t cached = 0, reserved = 0;
  };
  Pool& pool(int device);  // caller holds mu_
  void release_all(int device, Pool& p);
  mutable std::mutex mu_;
  std::map<int, Pool> pools_;
};

/// The process-wide allocator (never destroyed: tensors may outlive static destructors).
CachingAllocator& caching_allocator();

/// cudaSetDevice(index) if it is not the current device already.
void set_device(int index);

}  // namespace minitorch::cuda
