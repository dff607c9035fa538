#include "minitorch/allocator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "minitorch/events.h"

namespace minitorch {

const char* tag_name(MemTag tag) {
  static const char* names[kNumMemTags] = {"param", "grad", "optim", "optim_temp", "activation", "comm", "other"};
  return names[static_cast<int>(tag)];
}

namespace {

thread_local MemTag t_current_tag = MemTag::other;
thread_local TransferPurpose t_transfer_purpose = TransferPurpose::model;

/// 64-byte aligned host memory (a cache line; AVX-512 loads never split), with a cache of large
/// blocks: a training step frees and allocates the same big buffers (logits, gradients) every step,
/// and a block fresh from the OS costs a page fault plus a zeroed page per 4 KiB — 18% of a GPT-2
/// step before this cache. Blocks of 1 MiB and more are rounded up to whole MiB, kept on free and
/// handed out again for the same rounded size (the idea of PyTorch's CUDA caching allocator).
/// Accounting is per Storage, so cached bytes never count toward any tag.
class CpuAllocator final : public DeviceAllocator {
 public:
  static constexpr std::size_t kCachedFrom = std::size_t{1} << 20;

  ~CpuAllocator() override { release_cached(); }

  void* allocate(std::size_t bytes, int) override {
    if (bytes == 0) return nullptr;
    const std::size_t size = rounded(bytes);
    if (size >= kCachedFrom) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = cache_.find(size);
      if (it != cache_.end()) {
        void* p = it->second;
        cache_.erase(it);
        cached_bytes_ -= size;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, size);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* ptr, std::size_t bytes, int) override {
    if (!ptr) return;
    const std::size_t size = rounded(bytes);
    if (size < kCachedFrom) return std::free(ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    cache_.emplace(size, ptr);
    cached_bytes_ += size;
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes, int) override { std::memcpy(dst, src, bytes); }
  void copy_from_host(void* dst, const void* src, std::size_t bytes, int) override { std::memcpy(dst, src, bytes); }

  std::size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_bytes_;
  }
  void release_cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, p] : cache_) std::free(p);
    cache_.clear();
    cached_bytes_ = 0;
  }

 private:
  static std::size_t rounded(std::size_t bytes) {
    return bytes >= kCachedFrom ? (bytes + kCachedFrom - 1) / kCachedFrom * kCachedFrom : (bytes + 63) / 64 * 64;
  }
  std::mutex mutex_;
  std::unordered_multimap<std::size_t, void*> cache_;  // rounded size -> free block
  std::size_t cached_bytes_ = 0;
};

/// The allocator state: registered device allocators and the per-device ledger. This (with the
/// process group) is the only process-wide mutable state in minitorch.
struct AllocatorState {
  std::mutex mutex;
  CpuAllocator cpu;
  CpuAllocator sim;  // the simulated accelerator's bytes are host memory, accounted in a pool of their own
  DeviceAllocator* cuda = nullptr;
  std::map<std::pair<int, int>, MemoryStats> ledger;   // (device type, index) -> stats
  std::map<std::pair<int, int>, std::int64_t> capacity;  // (device type, index) -> bytes; absent = no limit
  std::map<std::pair<int, int>, double> link;             // sim: (type, index) -> bytes per second; absent = instant
  std::map<std::pair<int, int>, std::int64_t> period_peak;  // take_period_peak: the highest total since the last take
  TransferStats transfers;
};

AllocatorState& state() {
  static AllocatorState s;
  return s;
}

MemoryStats& stats_for(AllocatorState& s, Device d) {
  return s.ledger[{static_cast<int>(d.type), d.index}];
}

}  // namespace

TagScope::TagScope(MemTag tag) : previous_(t_current_tag) { t_current_tag = tag; }
TagScope::~TagScope() { t_current_tag = previous_; }
MemTag current_tag() { return t_current_tag; }

std::size_t cpu_cached_bytes() { return state().cpu.cached_bytes(); }
void cpu_empty_cache() { state().cpu.release_cached(); }

void register_device_allocator(DeviceType type, DeviceAllocator* allocator) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (type != DeviceType::cuda) throw std::invalid_argument("the CPU and sim allocators are built in");
  s.cuda = allocator;
}

DeviceAllocator& device_allocator(DeviceType type) {
  auto& s = state();
  if (type == DeviceType::cpu) return s.cpu;
  if (type == DeviceType::sim) return s.sim;
  if (!s.cuda) throw std::runtime_error("no CUDA allocator registered (this build has no CUDA support)");
  return *s.cuda;
}

namespace {
/// Reports an allocation or release to the event sink (after the ledger's lock is released).
void report(events::Kind kind, Device device, MemTag tag, std::int64_t bytes, std::uint64_t block) {
  events::Event e;
  e.category = events::Category::memory;
  e.kind = kind;
  e.tag = tag;
  e.bytes = bytes;
  e.id = block;
  e.device = device.type == DeviceType::cpu ? 0 : 1 + device.index;
  events::emit(std::move(e));
}
}  // namespace

TransferScope::TransferScope(TransferPurpose purpose) : previous_(t_transfer_purpose) { t_transfer_purpose = purpose; }
TransferScope::~TransferScope() { t_transfer_purpose = previous_; }

TransferStats transfer_stats() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.transfers;
}

namespace {
/// The begin or end of a disk transfer's span (the trace's disk track).
void emit_disk_span(events::Kind kind, bool writing, std::int64_t bytes, std::uint64_t id) {
  events::Event e;
  e.category = events::Category::transfer;
  e.kind = kind;
  e.name = writing ? "disk_write" : "disk_read";
  e.scope = "model";
  e.bytes = bytes;
  e.id = id;
  events::emit(std::move(e));
}
}  // namespace

DiskTransfer::DiskTransfer(bool writing, std::int64_t bytes) : writing_(writing), bytes_(bytes) {
  if (events::enabled()) emit_disk_span(events::Kind::begin, writing, bytes, id_ = events::next_id());
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  (writing ? s.transfers.disk_write : s.transfers.disk_read) += bytes;
}

DiskTransfer::~DiskTransfer() {
  if (id_ != 0 && events::enabled()) emit_disk_span(events::Kind::end, writing_, bytes_, id_);
}

void copy_between(void* dst, Device to, const void* src, Device from, std::size_t bytes, MemTag tag) {
  if (!to.is_cpu() && !from.is_cpu())
    throw std::invalid_argument("copy_between: " + from.str() + " -> " + to.str() + ": one side must be the host (cpu)");
  const bool up = from.is_cpu();
  const bool io = t_transfer_purpose == TransferPurpose::io;
  const bool traced = events::enabled();
  events::Event e;
  if (traced) {  // a span: the trace draws the copy on its own thread (trace/chrome.h)
    e.category = events::Category::transfer;
    e.kind = events::Kind::begin;
    e.name = up ? "h2d" : "d2h";
    e.scope = io ? "io" : "model";
    e.bytes = static_cast<std::int64_t>(bytes);
    e.tag = tag;
    e.device = 1 + (up ? to.index : from.index);
    e.id = events::next_id();
    events::emit(e);
  }
  const Device device = up ? to : from;
  const auto start = std::chrono::steady_clock::now();
  if (up) device_allocator(to.type).copy_from_host(dst, src, bytes, to.index);
  else device_allocator(from.type).copy_to_host(dst, src, bytes, from.index);
  // sim's link: a memcpy is far faster than PCIe, so a set bandwidth holds the copy for bytes ÷ bandwidth.
  if (const double bandwidth = link_bandwidth(device); bandwidth > 0)
    std::this_thread::sleep_until(start + std::chrono::duration<double>(static_cast<double>(bytes) / bandwidth));
  if (traced) {
    e.kind = events::Kind::end;
    events::emit(std::move(e));
  }
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto n = static_cast<std::int64_t>(bytes);
  (up ? (io ? s.transfers.io_h2d : s.transfers.h2d) : (io ? s.transfers.io_d2h : s.transfers.d2h)) += n;
}

void set_memory_capacity(Device device, std::int64_t bytes) {
  if (bytes < 0) throw std::invalid_argument("set_memory_capacity: " + std::to_string(bytes) + " bytes is negative");
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (bytes == 0) s.capacity.erase({static_cast<int>(device.type), device.index});
  else s.capacity[{static_cast<int>(device.type), device.index}] = bytes;
}

void set_link_bandwidth(Device device, double bytes_per_second) {
  if (!device.is_sim())
    throw std::invalid_argument("set_link_bandwidth: " + device.str() + " is not the simulated accelerator (sim)");
  if (!(bytes_per_second >= 0))
    throw std::invalid_argument("set_link_bandwidth: " + std::to_string(bytes_per_second) + " bytes per second");
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (bytes_per_second == 0) s.link.erase({static_cast<int>(device.type), device.index});
  else s.link[{static_cast<int>(device.type), device.index}] = bytes_per_second;
}

double link_bandwidth(Device device) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.link.find({static_cast<int>(device.type), device.index});
  return it == s.link.end() ? 0.0 : it->second;
}

std::int64_t memory_capacity(Device device) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.capacity.find({static_cast<int>(device.type), device.index});
  return it == s.capacity.end() ? 0 : it->second;
}

namespace {
std::string mib(std::int64_t bytes) {
  std::ostringstream os;
  os.precision(bytes >= 10 * 1048576 ? 1 : 2);
  os << std::fixed << static_cast<double>(bytes) / 1048576.0 << " MiB (" << bytes << " B)";
  return os.str();
}
std::string oom_message(Device device, MemTag tag, std::int64_t requested, std::int64_t capacity, const MemoryStats& m) {
  std::ostringstream os;
  os << "out of memory on " << device.str() << ": " << mib(requested) << " of " << tag_name(tag) << " asked for, "
     << mib(m.current_total) << " in use of a capacity of " << mib(capacity) << " (in use:";
  for (int t = 0; t < kNumMemTags; ++t)
    if (m.current_bytes[static_cast<std::size_t>(t)] != 0)
      os << " " << tag_name(static_cast<MemTag>(t)) << " " << m.current_bytes[static_cast<std::size_t>(t)] << " B";
  os << ")";
  return os.str();
}
}  // namespace

OutOfMemory::OutOfMemory(Device device_, MemTag tag_, std::int64_t requested_, std::int64_t capacity_, const MemoryStats& in_use_)
    : std::runtime_error(oom_message(device_, tag_, requested_, capacity_, in_use_)),
      device(device_), tag(tag_), requested(requested_), capacity(capacity_), in_use(in_use_) {}

void account_alloc(Device device, MemTag tag, std::int64_t bytes, std::uint64_t block) {
  {
    auto& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    MemoryStats& m = stats_for(s, device);
    if (auto cap = s.capacity.find({static_cast<int>(device.type), device.index});
        cap != s.capacity.end() && m.current_total + bytes > cap->second)
      throw OutOfMemory(device, tag, bytes, cap->second, m);
    int t = static_cast<int>(tag);
    m.current_bytes[t] += bytes;
    m.current_total += bytes;
    if (m.current_bytes[t] > m.peak_bytes[t]) m.peak_bytes[t] = m.current_bytes[t];
    if (m.current_total > m.peak_total) m.peak_total = m.current_total;
    if (auto p = s.period_peak.find({static_cast<int>(device.type), device.index});
        p != s.period_peak.end() && m.current_total > p->second)
      p->second = m.current_total;
  }
  if (events::enabled()) report(events::Kind::alloc, device, tag, bytes, block);
}

void account_free(Device device, MemTag tag, std::int64_t bytes, std::uint64_t block) {
  {
    auto& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    MemoryStats& m = stats_for(s, device);
    m.current_bytes[static_cast<int>(tag)] -= bytes;
    m.current_total -= bytes;
  }
  if (events::enabled()) report(events::Kind::free, device, tag, bytes, block);
}

MemoryStats memory_stats(Device device) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return stats_for(s, device);
}

std::int64_t take_period_peak(Device device) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::int64_t now = stats_for(s, device).current_total;
  auto [it, first] = s.period_peak.try_emplace({static_cast<int>(device.type), device.index}, now);
  const std::int64_t peak = std::max(it->second, now);
  it->second = now;
  return peak;
}

void reset_peak_memory(Device device) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  MemoryStats& m = stats_for(s, device);
  m.peak_bytes = m.current_bytes;
  m.peak_total = m.current_total;
}

std::string memory_report(Device device) {
  MemoryStats m = memory_stats(device);
  std::ostringstream os;
  os << "memory on " << device.str() << " (MiB, current / peak):";
  for (int t = 0; t < kNumMemTags; ++t)
    os << " " << tag_name(static_cast<MemTag>(t)) << " " << m.current_bytes[t] / 1048576.0 << "/"
       << m.peak_bytes[t] / 1048576.0;
  os << " | total " << m.current_total / 1048576.0 << "/" << m.peak_total / 1048576.0;
  return os.str();
}

}  // namespace minitorch
