// Collectives report to the per-rank event sink: one begin and one end per recorded operation, with
// the ring volume the byte accounting records, the peer of a point-to-point transfer and the flat
// range the caller named; bookkeeping traffic (NoRecordScope) reports nothing.
#include <gtest/gtest.h>

#include <algorithm>

#include "dist/process_group.h"
#include "minitorch/events.h"

using namespace minitorch;

namespace {
std::vector<events::Event> comm_events(const events::Recorder& rec) {
  std::vector<events::Event> out;
  for (const auto& e : rec.events())
    if (e.category == events::Category::comm) out.push_back(e);
  return out;
}
}  // namespace

TEST(L05_CommEvents, EveryRecordedCollectiveBeginsAndEndsWithItsVolume) {
  auto& world = dist::world();
  const int N = world.size(), r = world.rank();
  events::Recorder rec;
  {
    events::Attach listen(rec);
    Tensor t = Tensor::ones({1000});
    world.all_reduce(t);
    {
      events::FlatRange what("bucket 0", 4000, 5000);
      auto work = world.reduce_scatter_async(Tensor::ones({1000}));
      EXPECT_EQ(comm_events(rec).size(), 3u) << "begun, not ended before wait()";
      work.wait();
    }
    dist::NoRecordScope not_counted(world);
    world.all_reduce(t);  // bookkeeping: no events
  }
  auto ev = comm_events(rec);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].kind, events::Kind::begin);
  EXPECT_EQ(ev[0].name, "all_reduce");
  EXPECT_EQ(ev[0].elements, dist::all_reduce_volume(1000, N, r));
  EXPECT_EQ(ev[0].bytes, 4 * ev[0].elements);
  EXPECT_EQ(ev[1].kind, events::Kind::end);
  EXPECT_EQ(ev[1].id, ev[0].id);
  EXPECT_EQ(ev[2].name, "reduce_scatter");
  EXPECT_EQ(ev[2].elements, dist::reduce_scatter_volume(1000, N, r));
  EXPECT_EQ(ev[2].scope, "bucket 0");
  EXPECT_EQ(ev[2].range_begin, 4000);
  EXPECT_EQ(ev[2].range_end, 5000);
  EXPECT_EQ(ev[3].kind, events::Kind::end);
  EXPECT_EQ(ev[3].id, ev[2].id);
  EXPECT_NE(ev[0].id, ev[2].id);
}

TEST(L05_CommEvents, PointToPointNamesThePeer) {
  auto& world = dist::world();
  const int N = world.size(), r = world.rank();
  events::Recorder rec;
  {
    events::Attach listen(rec);
    Tensor out = Tensor::full({64}, static_cast<float>(r)), in = Tensor::zeros({64});
    world.send(out, (r + 1) % N);
    world.recv(in, (r - 1 + N) % N);
    world.barrier();
  }
  auto ev = comm_events(rec);
  auto send = std::find_if(ev.begin(), ev.end(), [](const auto& e) { return e.name == "send" && e.kind == events::Kind::begin; });
  auto recv = std::find_if(ev.begin(), ev.end(), [](const auto& e) { return e.name == "recv" && e.kind == events::Kind::begin; });
  ASSERT_NE(send, ev.end());
  ASSERT_NE(recv, ev.end());
  EXPECT_EQ(send->peer, (r + 1) % N);
  EXPECT_EQ(send->elements, 64);
  EXPECT_EQ(recv->peer, (r - 1 + N) % N);
  EXPECT_EQ(recv->elements, 0);
  EXPECT_EQ(std::count_if(ev.begin(), ev.end(), [&](const auto& e) { return e.kind == events::Kind::end && e.id == recv->id; }), 1);
}
