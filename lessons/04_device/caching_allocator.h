#pragma once
// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) in miniature, as bookkeeping: blocks are
// ranges of segments, no byte is real. A request is rounded up to a multiple of 512 B and served from a free
// block of its pool (best fit, split when the rest is worth keeping); only when none fits does the allocator
// call the system (a "cudaMalloc") for a new segment. A freed block merges with its free neighbours and stays
// in the cache, reserved, until empty_cache() returns the segments that are wholly free.
//
//   lesson04::CachingAllocator a;
//   auto h = a.malloc(1000);   // 1024 B block at the front of a new 2 MiB segment: 1 system call, 1 split
//   a.free(h);                 // merges back: one free 2 MiB block, still reserved
//   h = a.malloc(1000);        // the same block again: a reuse, no system call
//
// Recording and replay: record_pool_events() takes the alloc/free events of a device's pool from minitorch's
// event sink while some work runs; EventReplay plays them on a CachingAllocator (lesson 04's beat, and its test).
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "minitorch/device.h"

namespace lesson04 {

inline constexpr std::int64_t kMinBlockSize = 512;        // every block is a multiple of this (PyTorch: kMinBlockSize)
inline constexpr std::int64_t kSmallSize = 1 << 20;       // rounded requests up to 1 MiB go to the small pool
inline constexpr std::int64_t kSmallBuffer = 2 << 20;     // a small pool's segment: 2 MiB
inline constexpr std::int64_t kLargeBuffer = 20 << 20;    // a large pool's segment for requests under kMinLargeAlloc
inline constexpr std::int64_t kMinLargeAlloc = 10 << 20;  // from here a segment is the request rounded up to kRoundLarge
inline constexpr std::int64_t kRoundLarge = 2 << 20;

/// What torch.cuda.memory_stats() calls requested_bytes, allocated_bytes, reserved_bytes (current and peak, in
/// bytes) and the counts of events. Fragmentation, as the lesson uses the word: reserved − allocated.
struct AllocatorStats {
  std::int64_t requested = 0, allocated = 0, reserved = 0;  // live: what callers asked; their blocks; the segments
  std::int64_t peak_requested = 0, peak_allocated = 0, peak_reserved = 0;
  std::int64_t segments_allocated = 0;  // system calls (cudaMalloc)
  std::int64_t segments_freed = 0;      // segments empty_cache() gave back (cudaFree)
  std::int64_t reuses = 0;              // requests served from a cached free block, without a system call
  std::int64_t splits = 0, merges = 0;  // blocks cut in two on malloc; neighbours joined on free
};

/// A range [address, address + size) of one segment, handed out or free.
struct Block {
  std::uint64_t handle = 0;    // what malloc returned for it (and free takes)
  std::int64_t address = 0;    // bytes from the start of the simulated address space
  std::int64_t size = 0;       // bytes, a multiple of kMinBlockSize
  std::int64_t requested = 0;  // bytes the caller asked for (0 while free)
  std::int64_t segment = 0;    // the address of the segment it lies in
  bool small = false;          // in the small pool (its segment was made for a request of at most kSmallSize)
  bool allocated = false;
  Block* prev = nullptr;       // neighbours in the same segment (inside the allocator; nullptr at its ends)
  Block* next = nullptr;
};

class CachingAllocator {
 public:
  CachingAllocator() = default;
  CachingAllocator(const CachingAllocator&) = delete;  // blocks point at each other
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A block of at least `bytes` (>= 0) bytes; returns its handle.
  std::uint64_t malloc(std::int64_t bytes);
  /// Returns the block to its pool (not to the system). Unknown or freed handle: std::invalid_argument.
  void free(std::uint64_t handle);
  /// Gives every wholly free segment back to the system; returns their bytes.
  std::int64_t empty_cache();

  const AllocatorStats& stats() const { return stats_; }
  /// The live or free block `handle` names; std::invalid_argument if none.
  const Block& block(std::uint64_t handle) const;
  /// Every block, by address (torch.cuda.memory_snapshot() in miniature).
  std::vector<Block> blocks() const;

  /// bytes -> a multiple of 512, at least 512.
  static std::int64_t round_size(std::int64_t bytes);
  /// A rounded request -> the bytes of the segment made for it: 2 MiB (small), 20 MiB (under 10 MiB), else
  /// the request rounded up to 2 MiB.
  static std::int64_t segment_size(std::int64_t rounded);

 private:
  // The free blocks of one pool, by (size, address): the first at or after a size is the best fit.
  struct BySizeThenAddress {
    using is_transparent = void;  // lower_bound(size) searches by size alone
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->address < b->address;
    }
    bool operator()(const Block* a, std::int64_t size) const { return a->size < size; }
    bool operator()(std::int64_t size, const Block* b) const { return size < b->size; }
  };
  using Pool = std::set<Block*, BySizeThenAddress>;

  Pool& pool_of(bool small) { return small ? small_pool_ : large_pool_; }
  Block* find_free_block(Pool& pool, std::int64_t size);  // lab task L04.2
  void split(Block* block, std::int64_t size);            // lab task L04.2
  Block* new_block(std::int64_t address, std::int64_t size, std::int64_t segment, bool small);
  Block* new_segment(std::int64_t size);
  void merge(Block* block, Block* neighbour);

  std::map<std::uint64_t, Block> blocks_;  // by handle; a std::map keeps the blocks where they are
  Pool small_pool_, large_pool_;
  std::uint64_t next_handle_ = 1;
  std::int64_t next_address_ = 0;  // where the next segment begins (addresses are never reused)
  AllocatorStats stats_;
};

/// One allocation or release of a device's pool, as recorded: `block` pairs an alloc with its free.
struct PoolEvent {
  bool alloc;
  std::uint64_t block;
  std::int64_t bytes;
};

/// Runs `work` with a minitorch::events::Recorder attached (so no other sink may be attached) and returns the
/// alloc/free events of `device`'s pool, in order. Dropped: blocks allocated while nobody listened (block id 0),
/// and a retag's free + alloc of the same block (Storage::retag: the block stays where it is). Kept: the free
/// of a block allocated before this recording (an earlier phase's; EventReplay skips those it never saw).
std::vector<PoolEvent> record_pool_events(minitorch::Device device, const std::function<void()>& work);

/// Plays recorded events on `allocator`, phase after phase: each recorded block gets the handle its malloc
/// returned, and its free frees that handle.
class EventReplay {
 public:
  explicit EventReplay(CachingAllocator& allocator) : allocator_(allocator) {}
  void play(const std::vector<PoolEvent>& events);
  /// reserved − allocated the last time allocated stood at its peak (bytes).
  std::int64_t fragmentation_at_peak() const { return fragmentation_at_peak_; }
  /// Frees of blocks allocated before the first phase (skipped).
  std::int64_t unknown_frees() const { return unknown_frees_; }
  std::int64_t live_blocks() const { return static_cast<std::int64_t>(handles_.size()); }

 private:
  CachingAllocator& allocator_;
  std::unordered_map<std::uint64_t, std::uint64_t> handles_;  // recorded block -> allocator handle, while live
  std::int64_t fragmentation_at_peak_ = 0, unknown_frees_ = 0;
};

}  // namespace lesson04
