// The per-rank event sink: spans pair up, allocations are reported with their tag, nothing is
// recorded without a sink, and only one sink listens at a time.
#include <gtest/gtest.h>

#include "minitorch/events.h"
#include "minitorch/tensor.h"
#include "test_util.h"

using namespace minitorch;

TEST(L05_Events, SpansPairUpAndAllocationsCarryTheirTag) {
  events::Recorder rec;
  {
    events::Attach on(rec);
    events::Span s(events::Category::compute, "forward", "transformer.h.0", /*micro_step=*/1);
    TagScope scope(MemTag::activation);
    Tensor t = Tensor::zeros({256});  // 1024 bytes
  }
  auto ev = rec.events();
  ASSERT_EQ(ev.size(), 4u);  // begin, alloc, free, end
  EXPECT_EQ(ev[0].kind, events::Kind::begin);
  EXPECT_EQ(ev[0].name, "forward");
  EXPECT_EQ(ev[0].scope, "transformer.h.0");
  EXPECT_EQ(ev[0].micro_step, 1);
  EXPECT_EQ(ev[1].kind, events::Kind::alloc);
  EXPECT_EQ(ev[1].tag, MemTag::activation);
  EXPECT_EQ(ev[1].bytes, 1024);
  EXPECT_EQ(ev[2].kind, events::Kind::free);
  EXPECT_EQ(ev[2].bytes, 1024);
  EXPECT_EQ(ev[3].kind, events::Kind::end);
  EXPECT_EQ(ev[3].id, ev[0].id);
  EXPECT_LE(ev[0].time_us, ev[3].time_us);
}

TEST(L05_Events, NothingIsRecordedWithoutASinkAndOneSinkAtATime) {
  events::Recorder rec;
  EXPECT_FALSE(events::enabled());
  { events::Span s(events::Category::compute, "forward"); Tensor t = Tensor::zeros({8}); }
  {
    events::Attach on(rec);
    EXPECT_TRUE(events::enabled());
    events::Recorder other;
    EXPECT_TRUE(mt_test::contains(mt_test::error_of([&] { events::Attach twice(other); }), "already attached"));
  }
  EXPECT_FALSE(events::enabled());
  EXPECT_TRUE(rec.events().empty());
}
