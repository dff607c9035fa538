// Lesson 13 — the vocabulary padding of tensor parallelism (tp/vocab.h): Megatron's rule, with nothing padded
// on one rank, and each rank's slice of real rows.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"
#include "tp/vocab.h"

namespace tp = minitorch::tp;
using mt_test::contains;
using mt_test::error_of;

TEST(L13_Vocab, PaddedToAMultipleOf128TimesTheTensorSizeOnlyAboveOneRank) {
  EXPECT_EQ(tp::padded_vocab_size(63, 1), 63);  // t = 1: every byte count stays as it is
  EXPECT_EQ(tp::padded_vocab_size(50257, 1), 50257);
  EXPECT_EQ(tp::padded_vocab_size(63, 2), 256);
  EXPECT_EQ(tp::padded_vocab_size(50257, 2), 50432);  // Megatron's GPT-2 at t = 2
  EXPECT_EQ(tp::padded_vocab_size(50257, 4), 50688);
  EXPECT_EQ(tp::padded_vocab_size(256, 2), 256);
  EXPECT_EQ(tp::padded_vocab_size(50257, 3), 50304);  // 128 · 3 · 131
  EXPECT_EQ(tp::padded_vocab_size(10, 2, 4), 16);
}

TEST(L13_Vocab, EachRankHoldsItsRowsAndKnowsWhichAreReal) {
  const tp::VocabSlice a = tp::vocab_slice(300, 512, 0, 4), b = tp::vocab_slice(300, 512, 2, 4),
                       c = tp::vocab_slice(300, 512, 3, 4);
  EXPECT_EQ(a.start, 0);
  EXPECT_EQ(a.rows, 128);
  EXPECT_EQ(a.valid, 128);
  EXPECT_EQ(b.start, 256);
  EXPECT_EQ(b.valid, 44);  // 256 .. 299
  EXPECT_EQ(c.start, 384);
  EXPECT_EQ(c.valid, 0);   // padding only
}

TEST(L13_Vocab, BadSizesAreOneClearError) {
  EXPECT_TRUE(contains(error_of([] { (void)tp::padded_vocab_size(0, 2); }), "must be positive"));
  EXPECT_TRUE(contains(error_of([] { (void)tp::vocab_slice(300, 510, 0, 4); }),
                       "the padded size must be >= V and divisible by the tensor size"));
  EXPECT_TRUE(contains(error_of([] { (void)tp::vocab_slice(300, 512, 4, 4); }), "rank 4 of 4"));
}
