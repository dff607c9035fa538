// The caching device allocator: free lists per device and rounded size (cuda/allocator.h).
#include "cuda/allocator.h"

#include <stdexcept>
#include <string>

#include "cuda/check.h"
#include "cuda/cuda.h"

namespace minitorch::cuda {

namespace {
constexpr std::size_t kSmallLimit = std::size_t{1} << 20;  // 1 MiB
constexpr std::size_t kSmallRound = 512;
constexpr std::size_t kLargeRound = std::size_t{2} << 20;  // 2 MiB
std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }
}  // namespace

std::size_t round_size(std::size_t bytes) {
  if (bytes <= kSmallLimit) return round_up(bytes == 0 ? 1 : bytes, kSmallRound);
  return round_up(bytes, kLargeRound);
}

void set_device(int index) {
  int cur = -1;
  MT_CUDA_CHECK(cudaGetDevice(&cur));
  if (cur != index) MT_CUDA_CHECK(cudaSetDevice(index));
}

CachingAllocator::Pool& CachingAllocator::pool(int device) { return pools_[device]; }

// bytes -> rounded size; reuse a cached block of exactly that size, else cudaMalloc (retry once
// after emptying the cache when the device is full).
void* CachingAllocator::allocate(std::size_t bytes, int device) {
  if (bytes == 0) return nullptr;  // empty tensors own no memory
  const std::size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  Pool& p = pool(device);
  auto it = p.free.find(size);
  if (it != p.free.end() && !it->second.empty()) {
    void* ptr = it->second.back();
    it->second.pop_back();
    p.cached -= size;
    return ptr;
  }
  set_device(device);
  void* ptr = nullptr;
  cudaError_t err = cudaMalloc(&ptr, size);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear the sticky-free error state of the runtime
    release_all(device, p);
    err = cudaMalloc(&ptr, size);
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::runtime_error("CUDA out of memory: cannot allocate " + std::to_string(bytes) + " bytes (" +
                             std::to_string(size) + " rounded) on cuda:" + std::to_string(device) + " (" +
                             std::to_string(p.reserved) + " bytes reserved by minitorch): " +
                             cudaGetErrorString(err));
  }
  p.reserved += size;
  return ptr;
}

// The block goes back to its free list; the driver sees nothing.
void CachingAllocator::deallocate(void* ptr, std::size_t bytes, int device) {
  if (!ptr) return;
  const std::size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  Pool& p = pool(device);
  p.free[size].push_back(ptr);
  p.cached += size;
}

void CachingAllocator::copy_to_host(void* host_dst, const void* src, std::size_t bytes, int device) {
  if (bytes == 0) return;
  set_device(device);
  MT_CUDA_CHECK(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost));  // waits for the kernels before it
}

void CachingAllocator::copy_from_host(void* dst, const void* host_src, std::size_t bytes, int device) {
  if (bytes == 0) return;
  set_device(device);
  MT_CUDA_CHECK(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice));
}

std::size_t CachingAllocator::cached_bytes(int device) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [d, p] : pools_)
    if (device < 0 || d == device) n += p.cached;
  return n;
}

std::size_t CachingAllocator::reserved_bytes(int device) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [d, p] : pools_)
    if (device < 0 || d == device) n += p.reserved;
  return n;
}

void CachingAllocator::release_all(int device, Pool& p) {
  set_device(device);
  MT_CUDA_CHECK(cudaDeviceSynchronize());  // a cached block may still be read by a queued kernel
  for (auto& [size, blocks] : p.free) {
    for (void* ptr : blocks) MT_CUDA_CHECK(cudaFree(ptr));
    p.reserved -= size * blocks.size();
  }
  p.free.clear();
  p.cached = 0;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [d, p] : pools_) release_all(d, p);
}

CachingAllocator& caching_allocator() {
  static auto* a = new CachingAllocator();  // leaked on purpose: outlives every static Tensor
  return *a;
}

std::size_t cached_bytes(int device) { return caching_allocator().cached_bytes(device); }
std::size_t reserved_bytes(int device) { return caching_allocator().reserved_bytes(device); }
void empty_cache() { caching_allocator().empty_cache(); }

}  // namespace minitorch::cuda
