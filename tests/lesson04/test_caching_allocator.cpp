// Lesson 04's caching allocator (lessons/04_device/caching_allocator.h): lab task L04.2 — the best fit among a
// pool's free blocks and the split of the chosen block — and, around it, the given rounding, segment sizes, merge
// on free, statistics and empty_cache, each figure derived from PyTorch's rules in a comment. Last, a real
// recording of the sim pool replayed: its peak requested is the pool's own peak, to the byte.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lessons/04_device/caching_allocator.h"
#include "minitorch/allocator.h"
#include "minitorch/storage.h"
#include "minitorch/tensor.h"

namespace {

using lesson04::AllocatorStats;
using lesson04::Block;
using lesson04::CachingAllocator;

constexpr std::int64_t KiB = 1024, MiB = 1024 * 1024;

std::int64_t address_of(const CachingAllocator& a, std::uint64_t handle) { return a.block(handle).address; }

// The free blocks, by address: {address, size}.
std::vector<std::pair<std::int64_t, std::int64_t>> free_blocks(const CachingAllocator& a) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const Block& b : a.blocks())
    if (!b.allocated) out.emplace_back(b.address, b.size);
  return out;
}

}  // namespace

TEST(L04_T2_BestFit, PicksTheSmallestFittingFreeBlockNotTheFirstNorALargerOne) {
  CachingAllocator a;
  // One 2 MiB small segment: holes of 4096, 2048 and 3072 B, kept apart by live 512 B blocks.
  const auto big = a.malloc(4096), s1 = a.malloc(512), mid = a.malloc(2048), s2 = a.malloc(512);
  const auto three = a.malloc(3072), s3 = a.malloc(512);
  const std::int64_t at_big = address_of(a, big), at_mid = address_of(a, mid), at_three = address_of(a, three);
  EXPECT_EQ(at_big, 0);
  EXPECT_EQ(at_mid, 4608);     // 4096 + 512
  EXPECT_EQ(at_three, 7168);   // 4608 + 2048 + 512
  a.free(big);
  a.free(mid);
  a.free(three);
  ASSERT_EQ(a.stats().segments_allocated, 1);
  // 2000 -> 2048: the 2048 hole fits exactly; the first hole (4096, lowest address) and the segment's tail are bigger.
  const auto x = a.malloc(2000);
  EXPECT_EQ(address_of(a, x), at_mid) << "best fit: the smallest free block with size >= 2048";
  // 2600 -> 3072: the 3072 hole, not the 4096 one before it.
  const auto y = a.malloc(2600);
  EXPECT_EQ(address_of(a, y), at_three);
  // 4000 -> 4096: the 4096 hole, not the big tail of the segment.
  const auto z = a.malloc(4000);
  EXPECT_EQ(address_of(a, z), at_big);
  EXPECT_EQ(a.stats().segments_allocated, 1);
  EXPECT_EQ(a.stats().reuses, 8);  // every request after the first found a free block
  for (auto h : {s1, s2, s3, x, y, z}) a.free(h);
}

TEST(L04_T2_BestFit, OfEqualSizesTheLowestAddress) {
  CachingAllocator a;
  const auto first = a.malloc(1024);
  a.malloc(512);  // live blocks between the two: no merge
  const auto second = a.malloc(1024);
  a.malloc(512);
  a.free(second);  // freed first, at the higher address
  a.free(first);
  const auto again = a.malloc(1024);
  EXPECT_EQ(address_of(a, again), 0) << "two free 1024 B blocks: the one at the lower address";
}

TEST(L04_T2_Reuse, AFreedBlockIsReusedWithoutANewSegment) {
  CachingAllocator a;
  const auto h = a.malloc(1000);
  const std::int64_t at = address_of(a, h);
  a.free(h);
  EXPECT_EQ(a.stats().reserved, 2 * MiB);  // freed to the cache, not to the system
  const auto again = a.malloc(1000);
  EXPECT_EQ(address_of(a, again), at);
  EXPECT_EQ(a.stats().segments_allocated, 1);
  EXPECT_EQ(a.stats().reuses, 1);
  // The large pool alike: 3 MiB from a 20 MiB segment, freed, asked again.
  const auto big = a.malloc(3 * MiB);
  const std::int64_t big_at = address_of(a, big);
  a.free(big);
  const auto big_again = a.malloc(3 * MiB);
  EXPECT_EQ(address_of(a, big_again), big_at);
  EXPECT_EQ(a.stats().segments_allocated, 2);  // the 2 MiB one and the 20 MiB one
  EXPECT_EQ(a.stats().reuses, 2);
  EXPECT_EQ(a.stats().reserved, 22 * MiB);
}

TEST(L04_T2_Split, TheRemainderIsAFreeBlockTheNextRequestGets) {
  CachingAllocator a;
  // 1000 -> 1024 B at the front of a new 2 MiB segment; the rest, 2 MiB - 1024, a free block right after it.
  const auto h = a.malloc(1000);
  EXPECT_EQ(a.block(h).size, 1024);
  EXPECT_EQ(a.stats().splits, 1);
  using Free = std::vector<std::pair<std::int64_t, std::int64_t>>;
  EXPECT_EQ(free_blocks(a), (Free{{1024, 2 * MiB - 1024}}));
  const auto next = a.malloc(5000);  // 5000 -> 5120, cut from that rest
  EXPECT_EQ(address_of(a, next), 1024);
  EXPECT_EQ(a.block(next).size, 5120);
  EXPECT_EQ(free_blocks(a), (Free{{6144, 2 * MiB - 6144}}));
  EXPECT_EQ(a.stats().segments_allocated, 1);
  // Large: 3 MiB from a 20 MiB segment (it begins at 2 MiB), the 17 MiB rest serves 4 MiB next.
  const auto l1 = a.malloc(3 * MiB), l2 = a.malloc(4 * MiB);
  EXPECT_EQ(address_of(a, l1), 2 * MiB);
  EXPECT_EQ(address_of(a, l2), 5 * MiB);
  EXPECT_EQ(a.block(l2).size, 4 * MiB);
  EXPECT_EQ(a.stats().segments_allocated, 2);
  EXPECT_EQ(a.stats().splits, 4);
}

TEST(L04_T2_Split, SmallPoolSplitsFrom512BOfRest) {
  CachingAllocator a;
  // A free hole of 1024 B between two live blocks; 512 B from it leaves 512 B: exactly the threshold, so split.
  const auto hole = a.malloc(1024);
  a.malloc(512);  // the wall after it
  a.free(hole);
  const std::int64_t splits = a.stats().splits;
  const auto h = a.malloc(512);
  EXPECT_EQ(a.block(h).size, 512);
  EXPECT_EQ(a.stats().splits, splits + 1);
  EXPECT_EQ(a.stats().allocated, 512 + 512);
  // The 512 B rest is what the next 512 B request gets; it fits exactly (rest 0): no split.
  const auto h2 = a.malloc(100);
  EXPECT_EQ(address_of(a, h2), 512);
  EXPECT_EQ(a.stats().splits, splits + 1);
}

TEST(L04_T2_Split, LargePoolSplitsOnlyOverOneMiBOfRest) {
  CachingAllocator a;
  // 19 MiB: a 20 MiB segment, rest 1 MiB, not over 1 MiB: the whole segment is the block.
  const auto h = a.malloc(19 * MiB);
  EXPECT_EQ(a.block(h).size, 20 * MiB);
  EXPECT_EQ(a.stats().splits, 0);
  EXPECT_EQ(a.stats().allocated, 20 * MiB);
  // 19 MiB - 512: another 20 MiB segment, rest 1 MiB + 512: split.
  const auto h2 = a.malloc(19 * MiB - 512);
  EXPECT_EQ(a.block(h2).size, 19 * MiB - 512);
  EXPECT_EQ(a.stats().splits, 1);
  // 11 MiB (>= 10 MiB): a segment of 11 MiB rounded up to 2 MiB = 12 MiB, rest 1 MiB: no split.
  const auto h3 = a.malloc(11 * MiB);
  EXPECT_EQ(a.block(h3).size, 12 * MiB);
  // 10.5 MiB: again 12 MiB, rest 1.5 MiB: split.
  const auto h4 = a.malloc(10 * MiB + 512 * KiB);
  EXPECT_EQ(a.block(h4).size, 10 * MiB + 512 * KiB);
  EXPECT_EQ(a.stats().splits, 2);
  EXPECT_EQ(a.stats().reserved, 20 * MiB + 20 * MiB + 12 * MiB + 12 * MiB);
}

TEST(L04_T2_Stats, RequestedAllocatedReservedToTheByte) {
  CachingAllocator a;
  // a: 1000 B -> 1024 B (small pool) from a new 2 MiB segment (2'097'152 B).
  const auto sa = a.malloc(1000);
  // b: 3 MiB + 100 = 3'145'828 B -> 3'146'240 B (next multiple of 512; large pool, under 10 MiB) from a new
  //    20 MiB segment (20'971'520 B); rest 17'825'280 B > 1 MiB: split.
  const auto sb = a.malloc(3 * MiB + 100);
  // c: 12 MiB = 12'582'912 B: the best fit is b's 17'825'280 B rest, no new segment; rest 5'242'368 B: split.
  const auto sc = a.malloc(12 * MiB);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.requested, 1000 + 3'145'828 + 12'582'912);    // 15'729'740
  EXPECT_EQ(s.allocated, 1024 + 3'146'240 + 12'582'912);    // 15'730'176
  EXPECT_EQ(s.reserved, 2'097'152 + 20'971'520);            // 23'068'672
  EXPECT_EQ(s.segments_allocated, 2);
  EXPECT_EQ(s.reuses, 1);
  EXPECT_EQ(s.splits, 3);
  // free a, then d: 700 B -> 1024 B reuses a's block (merged back into its whole free segment, split again).
  a.free(sa);
  const auto sd = a.malloc(700);
  s = a.stats();
  EXPECT_EQ(s.requested, 700 + 3'145'828 + 12'582'912);     // 15'729'440
  EXPECT_EQ(s.allocated, 1024 + 3'146'240 + 12'582'912);    // 15'730'176
  EXPECT_EQ(s.peak_requested, 15'729'740);                  // before a was freed
  EXPECT_EQ(s.peak_allocated, 15'730'176);
  EXPECT_EQ(s.reserved - s.allocated, 23'068'672 - 15'730'176);  // fragmentation: 7'338'496 B cached
  EXPECT_EQ(s.reuses, 2);
  for (auto h : {sb, sc, sd}) a.free(h);
  s = a.stats();
  EXPECT_EQ(s.requested, 0);
  EXPECT_EQ(s.allocated, 0);
  EXPECT_EQ(s.reserved, 23'068'672);  // all free, all still cached
  EXPECT_EQ(a.empty_cache(), 23'068'672);
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(a.stats().peak_reserved, 23'068'672);
  EXPECT_EQ(a.stats().segments_freed, 2);
}

TEST(L04_T2_Merge, FreeMergesNeighboursAndEmptyCacheReturnsOnlyWholeSegments) {
  CachingAllocator a;
  const auto x = a.malloc(1024), y = a.malloc(1024), z = a.malloc(1024);  // one segment: x y z rest
  const auto other = a.malloc(2 * MiB);  // large pool: 2 MiB of a second (20 MiB) segment, kept live
  a.free(x);  // no free neighbour: stays apart
  a.free(z);  // merges with the rest after it
  EXPECT_EQ(a.stats().merges, 1);
  using Free = std::vector<std::pair<std::int64_t, std::int64_t>>;
  EXPECT_EQ(free_blocks(a), (Free{{0, 1024}, {2048, 2 * MiB - 2048}, {4 * MiB, 18 * MiB}}));
  EXPECT_EQ(a.empty_cache(), 0);  // no segment is wholly free
  a.free(y);  // merges with x before it and with z + rest after it: the whole segment, free
  EXPECT_EQ(a.stats().merges, 3);
  EXPECT_EQ(free_blocks(a), (Free{{0, 2 * MiB}, {4 * MiB, 18 * MiB}}));
  EXPECT_EQ(a.empty_cache(), 2 * MiB);  // the small segment; the large one holds `other`
  EXPECT_EQ(a.stats().reserved, 20 * MiB);
  a.free(other);
  EXPECT_EQ(a.empty_cache(), 20 * MiB);
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_TRUE(a.blocks().empty());
}

TEST(L04_T2_Free, AnUnknownOrFreedHandleThrowsNamingIt) {
  CachingAllocator a;
  const auto h = a.malloc(4096);
  a.free(h);
  try {
    a.free(h);
    FAIL() << "a double free must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("handle " + std::to_string(h)), std::string::npos) << e.what();
  }
  EXPECT_THROW(a.free(12345), std::invalid_argument);
  EXPECT_EQ(a.stats().requested, 0);
}

// A real recording: tensors made and dropped on sim (one retagged, one from before the recording freed in it),
// replayed. The replay asks what the pool's tensors asked, so its peak requested is the pool's peak over the
// recording (less what the pool held before), to the byte.
TEST(L04_Replay, ARecordingOfTheSimPoolPeaksWhereThePoolDid) {
  using namespace minitorch;
  const Device sim = Device::sim();
  auto before = std::make_optional(Tensor::zeros({1000}, DType::f32, sim));  // unnamed: allocated unrecorded
  const std::int64_t held = memory_stats(sim).current_total;
  reset_peak_memory(sim);
  std::optional<Tensor> kept;
  const std::vector<lesson04::PoolEvent> events = lesson04::record_pool_events(sim, [&] {
    Tensor a = Tensor::zeros({256, 1024}, DType::f32, sim);  // 1 MiB: small pool
    Tensor b = Tensor::zeros({3, 1000, 1000}, DType::f32, sim);  // 12 MB: large pool
    kept = Tensor::zeros({7, 333}, DType::f32, sim);
    kept->storage()->retag(MemTag::grad);  // a free + alloc of the same block: not a new allocation
    { Tensor c = Tensor::zeros({100}, DType::f32, sim); }
    before.reset();  // allocated before, freed here (after the peak: the replay, without it, peaks there too)
  });
  const std::int64_t real_peak = memory_stats(sim).peak_total - held;
  ASSERT_EQ(events.size(), 7u);  // allocs of a, b, kept, c; frees of c, b, a (kept lives on; before's is dropped)
  lesson04::CachingAllocator allocator;
  lesson04::EventReplay replay(allocator);
  replay.play(events);
  EXPECT_EQ(allocator.stats().peak_requested, real_peak);
  EXPECT_EQ(real_peak, 256 * 1024 * 4 + 3'000'000 * 4 + 7 * 333 * 4 + 100 * 4);  // a, b, kept and c at once
  EXPECT_EQ(allocator.stats().requested, 7 * 333 * 4);  // kept
  EXPECT_EQ(replay.live_blocks(), 1);
  EXPECT_EQ(replay.unknown_frees(), 0);
}

// Phases recorded apart: a block allocated in one and freed in the next pairs up in the replay; a free whose
// alloc no phase recorded is skipped.
TEST(L04_Replay, AFreeInALaterPhasePairsWithItsAlloc) {
  using namespace minitorch;
  const Device sim = Device::sim();
  std::optional<Tensor> t;
  const auto first = lesson04::record_pool_events(sim, [&] { t = Tensor::zeros({1000}, DType::f32, sim); });
  const auto second = lesson04::record_pool_events(sim, [&] { t.reset(); });
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_TRUE(first[0].alloc);
  EXPECT_FALSE(second[0].alloc);
  EXPECT_EQ(first[0].block, second[0].block);
  EXPECT_EQ(second[0].bytes, 4000);
  lesson04::CachingAllocator both;
  lesson04::EventReplay replay(both);
  replay.play(first);
  replay.play(second);
  EXPECT_EQ(both.stats().requested, 0);
  EXPECT_EQ(replay.unknown_frees(), 0);
  lesson04::CachingAllocator only_second;
  lesson04::EventReplay partial(only_second);
  partial.play(second);
  EXPECT_EQ(partial.unknown_frees(), 1);
  EXPECT_EQ(only_second.stats().segments_allocated, 0);
}
