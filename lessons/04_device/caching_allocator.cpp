// Lesson 04: the caching allocator (caching_allocator.h); lab task L04.2: find_free_block and split.
#include "caching_allocator.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "minitorch/events.h"
#include "minitorch/not_implemented.h"

namespace lesson04 {

// bytes (>= 0) -> bytes: the next multiple of 512, at least 512 (so that every split leaves aligned blocks)
std::int64_t CachingAllocator::round_size(std::int64_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

// rounded request (bytes) -> segment (bytes). Segments larger than the request leave room that later requests
// of the same pool split off without a system call.
std::int64_t CachingAllocator::segment_size(std::int64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

// pool, rounded size (bytes) -> the smallest free block of the pool with at least `size` bytes (of equal sizes,
// the lowest address), still in the pool; nullptr if none. Best fit keeps big blocks whole for big requests.
Block* CachingAllocator::find_free_block(Pool& pool, std::int64_t size) {
  // BEGIN SOLUTION L04.2
  const auto it = pool.lower_bound(size);  // the pool is sorted by (size, address)
  return it == pool.end() ? nullptr : *it;
  // END SOLUTION
}

// block: free, out of its pool, size >= `size` (rounded bytes). Keeps the first `size` bytes in `block` and
// makes the rest a free block of the same segment, back in the pool — if the rest is worth keeping: at least
// 512 B in the small pool; over 1 MiB in the large one, whose requests are all over 1 MiB (a smaller rest stays
// inside the block, allocated with it).
void CachingAllocator::split(Block* block, std::int64_t size) {
  // BEGIN SOLUTION L04.2
  const std::int64_t remaining = block->size - size;
  const bool worth_it = block->small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (!worth_it) return;
  Block* rest = new_block(block->address + size, remaining, block->segment, block->small);
  rest->prev = block;  // segment order: block, rest, what followed block
  rest->next = block->next;
  if (rest->next) rest->next->prev = rest;
  block->next = rest;
  block->size = size;
  pool_of(rest->small).insert(rest);
  ++stats_.splits;
  // END SOLUTION
}

// A free block's bookkeeping under a fresh handle (not yet in a pool, no neighbours).
Block* CachingAllocator::new_block(std::int64_t address, std::int64_t size, std::int64_t segment, bool small) {
  const std::uint64_t handle = next_handle_++;
  Block& b = blocks_[handle];
  b.handle = handle;
  b.address = address;
  b.size = size;
  b.segment = segment;
  b.small = small;
  return &b;
}

// The system call: a segment of segment_size(size) bytes for a rounded request of `size`, as one free block.
Block* CachingAllocator::new_segment(std::int64_t size) {
  const std::int64_t bytes = segment_size(size);
  Block* block = new_block(next_address_, bytes, next_address_, size <= kSmallSize);
  next_address_ += bytes;
  stats_.reserved += bytes;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  ++stats_.segments_allocated;
  return block;
}

// bytes (>= 0) -> the handle of a block of round_size(bytes): cached if one fits, else from a new segment.
std::uint64_t CachingAllocator::malloc(std::int64_t bytes) {
  if (bytes < 0) throw std::invalid_argument("CachingAllocator::malloc: " + std::to_string(bytes) + " bytes is negative");
  const std::int64_t size = round_size(bytes);
  Pool& pool = pool_of(size <= kSmallSize);
  Block* block = find_free_block(pool, size);
  if (block) {
    pool.erase(block);
    ++stats_.reuses;
  } else {
    block = new_segment(size);
  }
  split(block, size);
  block->allocated = true;
  block->requested = bytes;
  stats_.requested += bytes;
  stats_.allocated += block->size;  // the whole block: a rest too small to split counts as allocated
  stats_.peak_requested = std::max(stats_.peak_requested, stats_.requested);
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return block->handle;
}

// Joins `neighbour` (prev or next of `block` in its segment; nullptr or allocated: nothing) into `block`,
// which keeps its handle. Both are out of the pool afterwards.
void CachingAllocator::merge(Block* block, Block* neighbour) {
  if (!neighbour || neighbour->allocated) return;
  pool_of(neighbour->small).erase(neighbour);
  if (neighbour == block->prev) {
    block->address = neighbour->address;
    block->prev = neighbour->prev;
    if (block->prev) block->prev->next = block;
  } else {
    block->next = neighbour->next;
    if (block->next) block->next->prev = block;
  }
  block->size += neighbour->size;
  blocks_.erase(neighbour->handle);
  ++stats_.merges;
}

// handle of a live block -> its block free again, merged with free neighbours, back in its pool (still reserved).
void CachingAllocator::free(std::uint64_t handle) {
  const auto it = blocks_.find(handle);
  if (it == blocks_.end() || !it->second.allocated)
    throw std::invalid_argument("CachingAllocator::free: handle " + std::to_string(handle) +
                                " is not a live block (never allocated, or freed already)");
  Block* block = &it->second;
  stats_.requested -= block->requested;
  stats_.allocated -= block->size;
  block->allocated = false;
  block->requested = 0;
  merge(block, block->prev);  // free neighbours on both sides: one block again, so big requests fit later
  merge(block, block->next);
  pool_of(block->small).insert(block);
}

// -> bytes given back. A segment is wholly free when, merged, it is one free block without neighbours.
std::int64_t CachingAllocator::empty_cache() {
  std::int64_t released = 0;
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev || b->next) {
        ++it;
        continue;
      }
      it = pool->erase(it);
      released += b->size;
      stats_.reserved -= b->size;
      ++stats_.segments_freed;
      blocks_.erase(b->handle);
    }
  }
  return released;
}

const Block& CachingAllocator::block(std::uint64_t handle) const {
  const auto it = blocks_.find(handle);
  if (it == blocks_.end()) throw std::invalid_argument("CachingAllocator::block: no block " + std::to_string(handle));
  return it->second;
}

std::vector<Block> CachingAllocator::blocks() const {
  std::vector<Block> out;
  for (const auto& [handle, b] : blocks_) out.push_back(b);
  std::sort(out.begin(), out.end(), [](const Block& a, const Block& b) { return a.address < b.address; });
  return out;
}

// Event stream -> pool events of one device. A retag is a free of a block followed by an alloc of the same
// block (block ids are never reused): both go. The free is written when seen and crossed out if its alloc comes.
std::vector<PoolEvent> record_pool_events(minitorch::Device device, const std::function<void()>& work) {
  namespace events = minitorch::events;
  events::Recorder recorder;
  {
    events::Attach on(recorder);
    work();
  }
  const int code = device.is_cpu() ? 0 : 1 + device.index;  // events::Event::device
  std::vector<PoolEvent> out;
  std::vector<bool> crossed_out;
  std::unordered_map<std::uint64_t, std::size_t> last_free;  // block -> its free's index in `out`
  for (const events::Event& e : recorder.events()) {
    if (e.category != events::Category::memory || e.device != code || e.id == 0) continue;
    if (e.kind == events::Kind::free) {
      last_free[e.id] = out.size();
      out.push_back({false, e.id, e.bytes});
      crossed_out.push_back(false);
    } else if (e.kind == events::Kind::alloc) {
      if (const auto f = last_free.find(e.id); f != last_free.end()) {  // a retag: the block stays
        crossed_out[f->second] = true;
        last_free.erase(f);
        continue;
      }
      out.push_back({true, e.id, e.bytes});
      crossed_out.push_back(false);
    }
  }
  std::vector<PoolEvent> kept;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!crossed_out[i]) kept.push_back(out[i]);
  return kept;
}

// Recorded events, in order -> the same mallocs and frees on the allocator (bytes as recorded).
void EventReplay::play(const std::vector<PoolEvent>& events) {
  for (const PoolEvent& e : events) {
    if (e.alloc) {
      handles_[e.block] = allocator_.malloc(e.bytes);
      const AllocatorStats& s = allocator_.stats();
      if (s.allocated == s.peak_allocated) fragmentation_at_peak_ = s.reserved - s.allocated;
      continue;
    }
    const auto it = handles_.find(e.block);
    if (it == handles_.end()) {  // allocated before the first phase: not in this allocator
      ++unknown_frees_;
      continue;
    }
    allocator_.free(it->second);
    handles_.erase(it);
  }
}

}  // namespace lesson04
