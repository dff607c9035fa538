// Gemini's chunks before any memory moves (gemini/chunk_search.h, chunk_plan.h, tensor_state.h): the chunk size
// Colossal-AI's search picks on sizes worked out by hand, the greedy packing in order of use with a tensor bigger
// than a chunk, and the five tensor states with their nine transitions — every other one an error naming the
// tensor and both states.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gemini/chunk_plan.h"
#include "gemini/chunk_search.h"
#include "gemini/chunk_states.h"
#include "gemini/eviction.h"
#include "gemini/tensor_state.h"
#include "test_util.h"

using namespace minitorch::gemini;

namespace {

/// Options in elements rather than 2^20: the test's sizes are small.
ChunkSearchOptions in_elements(std::int64_t range, std::int64_t min_chunk, std::int64_t interval) {
  return {.search_range_m = static_cast<double>(range) / kMega,
          .min_chunk_size_m = static_cast<double>(min_chunk) / kMega,
          .interval = interval};
}

}  // namespace

TEST(L12_ChunkSearch, UnusedElementsAreTheEmptyTailsOfAGreedyPacking) {
  const std::vector<std::int64_t> sizes = {12, 30, 7, 25, 18};
  // [12 |28 empty] [30 7 |3] [25 |15] [18 |22]: a tensor that does not fit closes the chunk
  EXPECT_EQ(unused_elements(sizes, 40), 28 + 3 + 15 + 22);
  EXPECT_EQ(unused_elements(sizes, 92), 0) << "one chunk, exactly full";
  EXPECT_EQ(unused_elements(sizes, 100), 8);
}

TEST(L12_ChunkSearch, PicksTheSizeWithLeastWasteThenRoundsToTheDataParallelSize) {
  // 30, 30, 30, 10 elements, sizes tried from round_up(max(32, 30), 8) = 32 to 32 + 32 in steps of 8:
  //   32: [30|2] [30|2] [30|2] [10|22] = 28    40: [30|10] [30|10] [30 10|0] = 20    48: 18 + 18 + 8 = 44
  //   56: 26 + 26 + 16 = 68                    64: [30 30|4] [30 10|24] = 28          → 40, waste 20
  const std::vector<std::int64_t> sizes = {30, 30, 30, 10};
  const ChunkSearchResult four = search_chunk_size(sizes, 4, in_elements(32, 32, 8));
  EXPECT_EQ(four.chunk_size, 40);
  EXPECT_EQ(four.waste, 20);
  EXPECT_EQ(four.total, 100);
  EXPECT_FALSE(four.keep_gathered);
  EXPECT_EQ(search_chunk_size(sizes, 3, in_elements(32, 32, 8)).chunk_size, 42) << "a multiple of 3 ranks";
  // A range of 0 tries the start only.
  EXPECT_EQ(search_chunk_size(sizes, 1, in_elements(0, 32, 8)).chunk_size, 32);
}

TEST(L12_ChunkSearch, AModelSmallerThanTheMinimumIsOneChunkKeptGathered) {
  const std::vector<std::int64_t> sizes = {30, 30, 30, 10};
  const ChunkSearchResult r = search_chunk_size(sizes, 4, in_elements(32, 101, 8));
  EXPECT_TRUE(r.keep_gathered);
  EXPECT_EQ(r.chunk_size, 100) << "the whole model: plain data parallelism";
  // Colossal-AI's defaults (32 × 2^20 elements) keep the baby GPT's 0.81M parameters gathered.
  EXPECT_TRUE(search_chunk_size(std::vector<std::int64_t>{809600}, 4, {}).keep_gathered);
}

TEST(L12_ChunkSearch, ATensorBeyondMeanPlusThreeSigmaIsLeftOutOfTheSearch) {
  // Twenty tensors of 100 and one of 10000: mean 571, σ 2108, limit 6896 — the big one does not set the start.
  std::vector<std::int64_t> sizes(20, 100);
  sizes.push_back(10000);
  const ChunkSearchResult filtered = search_chunk_size(sizes, 1, in_elements(0, 200, 100));
  EXPECT_EQ(filtered.chunk_size, 200);
  EXPECT_EQ(filtered.waste, 0) << "ten chunks of two tensors of 100";
  ChunkSearchOptions all = in_elements(0, 200, 100);
  all.filter_large = false;
  EXPECT_EQ(search_chunk_size(sizes, 1, all).chunk_size, 10000);
}

TEST(L12_ChunkSearch, BadOptionsAreOneClearError) {
  const std::vector<std::int64_t> sizes = {10};
  EXPECT_THROW(search_chunk_size(sizes, 0, {}), std::invalid_argument);
  EXPECT_THROW(search_chunk_size(sizes, 1, in_elements(-8, 0, 8)), std::invalid_argument);
  EXPECT_THROW(search_chunk_size(sizes, 1, in_elements(8, 0, 0)), std::invalid_argument);
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([] { search_chunk_size(std::vector<std::int64_t>{4, 0}, 1, {}); }),
                                "a tensor of 0 elements"));
}

TEST(L12_T3_ChunkPlan, PacksInOrderOfUseAndGivesABigTensorAChunkOfItsOwn) {
  // Parameters 0, 1, 2 of 10, 50 and 10 elements, used in the order 2, 0, 1; chunks of 32 on 4 ranks:
  // [p2 10, p0 10 |12] then p1 (50 > 32) alone in a chunk of 52 (50 rounded up to 4 ranks).
  const std::vector<std::int64_t> numels = {10, 50, 10};
  const std::vector<std::size_t> order = {2, 0, 1};
  const ChunkPlan plan = pack_chunks(order, numels, 32, false, 4);
  ASSERT_EQ(plan.chunks.size(), 2u);
  EXPECT_EQ(plan.chunks[0].size, 32);
  ASSERT_EQ(plan.chunks[0].slots.size(), 2u);
  EXPECT_EQ(plan.chunks[0].slots[0].param, 2u);
  EXPECT_EQ(plan.chunks[0].slots[1].param, 0u);
  EXPECT_EQ(plan.chunks[0].slots[1].offset, 10);
  EXPECT_EQ(plan.chunks[1].size, 52);
  EXPECT_EQ(plan.chunks[1].slots[0].param, 1u);
  EXPECT_EQ(plan.waste(), 12 + 2);
  // The next small tensor fits the big chunk's 2 spare elements or opens a chunk of 32.
  const ChunkPlan more = pack_chunks(std::vector<std::size_t>{1, 0, 2}, numels, 32, false, 4);
  ASSERT_EQ(more.chunks.size(), 2u);
  EXPECT_EQ(more.chunks[0].size, 52);
  EXPECT_EQ(more.chunks[1].used(), 20);
}

TEST(L12_ChunkPlan, BadInputIsOneClearError) {
  const std::vector<std::int64_t> numels = {10, 20};
  EXPECT_THROW(pack_chunks(std::vector<std::size_t>{0}, numels, 0, false, 1), std::invalid_argument);
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([&] { pack_chunks(std::vector<std::size_t>{0, 0}, numels, 32, false, 1); }),
                                "parameter index 0 given twice"));
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([&] { pack_chunks(std::vector<std::size_t>{2}, numels, 32, false, 1); }),
                                "out of range"));
}

TEST(L12_T1_TensorState, NineTransitionsAreLegalAndEveryOtherIsAnErrorNamingTheTensorAndBothStates) {
  using S = TensorState;
  const std::vector<S> all = {S::free, S::compute, S::hold, S::hold_after_bwd, S::ready_for_reduce};
  const std::vector<std::pair<S, S>> legal = {{S::free, S::hold},
                                              {S::free, S::compute},
                                              {S::hold, S::free},
                                              {S::hold, S::compute},
                                              {S::compute, S::hold},
                                              {S::compute, S::hold_after_bwd},
                                              {S::hold_after_bwd, S::compute},
                                              {S::hold_after_bwd, S::ready_for_reduce},
                                              {S::ready_for_reduce, S::hold}};
  int n = 0;
  for (S from : all)
    for (S to : all) {
      const bool want = std::find(legal.begin(), legal.end(), std::pair{from, to}) != legal.end();
      EXPECT_EQ(legal_transition(from, to), want) << state_name(from) << " -> " << state_name(to);
      if (want) {
        EXPECT_EQ(transition("w", from, to), to);
        ++n;
      } else {
        const std::string e = mt_test::error_of([&] { transition("h.0.mlp.c_fc.weight", from, to); });
        EXPECT_TRUE(mt_test::contains(e, std::string("tensor 'h.0.mlp.c_fc.weight': ") + state_name(from) + " -> " +
                                             state_name(to) + " is not a Gemini transition"))
            << e;
      }
    }
  EXPECT_EQ(n, 9);
  EXPECT_EQ(mt_test::error_of([] { transition("w", S::hold_after_bwd, S::free); }),
            "tensor 'w': HOLD_AFTER_BWD -> FREE is not a Gemini transition (from HOLD_AFTER_BWD a tensor goes to "
            "COMPUTE, READY_FOR_REDUCE; gemini/tensor_state.h)");
}

TEST(L12_T1_ChunkStates, CountsTheStatesAndSaysWhenTheChunkMayBeReleasedOrReduced) {
  using S = TensorState;
  // One chunk of three tensors through a micro-step: forward, backward, the gradients final, the reduce-scatter.
  const std::vector<std::int64_t> numels = {10, 20, 2};
  const std::vector<std::string> names = {"h.0.attn.c_attn.weight", "h.0.attn.c_attn.bias", "h.0.ln_1.weight"};
  // The chunk as pack_chunks would lay it out (built by hand: this task's tests need no other task).
  PlannedChunk chunk{.size = 40, .keep_gathered = false, .slots = {{0, 0, numels[0]}, {1, 10, numels[1]}, {2, 30, numels[2]}}};
  ChunkStates c(chunk, names);
  EXPECT_EQ(c.count(S::hold), 3u);
  EXPECT_TRUE(c.can_release()) << "all HOLD: nobody computes with it";
  c.set(0, S::compute);
  c.set(1, S::compute);
  EXPECT_FALSE(c.can_release()) << "an operator uses it";
  c.set(0, S::hold);
  c.set(1, S::hold);
  EXPECT_TRUE(c.can_release());
  for (std::size_t k = 0; k < 3; ++k) c.set(k, S::compute), c.set(k, S::hold_after_bwd);  // the backward
  EXPECT_TRUE(c.can_release()) << "HOLD_AFTER_BWD may be released too";
  EXPECT_FALSE(c.can_reduce());
  c.set(0, S::ready_for_reduce);
  c.set(1, S::ready_for_reduce);
  EXPECT_FALSE(c.can_reduce()) << "one gradient is not final yet";
  EXPECT_FALSE(c.can_release()) << "READY_FOR_REDUCE: the gradients wait for the reduction";
  c.set(2, S::ready_for_reduce);
  EXPECT_TRUE(c.can_reduce());
  c.set_all(S::ready_for_reduce, S::hold);  // reduced
  EXPECT_EQ(c.count(S::hold), 3u);
  EXPECT_EQ(c.count(S::ready_for_reduce), 0u);
  // An illegal step names the tensor, and changes nothing.
  EXPECT_EQ(mt_test::error_of([&] { c.set(2, S::ready_for_reduce); }),
            "tensor 'h.0.ln_1.weight': HOLD -> READY_FOR_REDUCE is not a Gemini transition (from HOLD a tensor goes to "
            "FREE, COMPUTE; gemini/tensor_state.h)");
  EXPECT_EQ(c.state(2), S::hold);
  EXPECT_EQ(c.count(S::hold), 3u);
}

TEST(L12_T1_ChunkStates, AChunkKeptGatheredIsNeverReleased) {
  const PlannedChunk kept{.size = 8, .keep_gathered = true, .slots = {{0, 0, 8}}};
  ChunkStates c(kept, {"wte.weight"});
  EXPECT_EQ(c.count(TensorState::hold), 1u);
  EXPECT_FALSE(c.can_release()) << "whole on every rank, as DDP keeps it";
  EXPECT_THROW(ChunkStates(kept, {}), std::invalid_argument);
}

TEST(L12_T2_Eviction, OptEvictsTheFarthestNextUseAndBeatsLruOnBeladysSequence) {
  // The textbook sequence with room for 3: OPT 7 loads, LRU 10 (Belady 1966; every OS course's example).
  const UseSchedule s({1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5});
  const Replay opt = replay(s, 3, Eviction::opt), lru = replay(s, 3, Eviction::lru);
  EXPECT_EQ(opt.loads, 7u);
  EXPECT_EQ(lru.loads, 10u);
  // OPT at position 3 (chunk 4 comes): 1 is used next at 4, 2 at 5, 3 at 9 — evict 3. At 6 (chunk 5): 1 at 7, 2 at
  // 8, 4 at 10 — evict 4. At 9 (chunk 3): 1 and 2 never again, 5 at 11 — the lower id of the two, 1. At 10 (chunk 4):
  // 2 and 3 never, 5 at 11 — 2.
  EXPECT_EQ(opt.evicted, (std::vector<std::size_t>{3, 4, 1, 2}));
  EXPECT_EQ(opt.loaded_at, (std::vector<std::size_t>{0, 1, 2, 3, 6, 9, 10}));
  // LRU at 3 evicts 1 (used at 0), the earliest.
  ASSERT_FALSE(lru.evicted.empty());
  EXPECT_EQ(lru.evicted.front(), 1u);
  // Room for every chunk: each loads once, nothing is evicted.
  EXPECT_EQ(replay(s, 5, Eviction::opt).loads, 5u);
  EXPECT_TRUE(replay(s, 5, Eviction::lru).evicted.empty());
}

TEST(L12_T2_Eviction, TheChoiceAtOneMomentAndBadInput) {
  const UseSchedule s({0, 1, 2, 0, 2});
  const std::vector<std::size_t> resident = {0, 1};
  EXPECT_EQ(s.next_use(1, 2), UseSchedule::kNever);
  EXPECT_EQ(s.next_use(0, 2), 3u);
  EXPECT_EQ(evict_opt(s, 2, resident), 1u) << "1 is never used again";
  EXPECT_EQ(evict_lru(s, 2, resident), 0u) << "0 was used longest ago";
  EXPECT_THROW(evict_opt(s, 2, std::vector<std::size_t>{}), std::invalid_argument);
  EXPECT_THROW(replay(s, 0, Eviction::opt), std::invalid_argument);
}
