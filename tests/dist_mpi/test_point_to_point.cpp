// Lesson 05 — point to point on N ranks: buffered send (returns before the receiver is there, so rings
// and pairwise exchanges where everyone sends first cannot deadlock), isend / irecv, and their byte
// accounting. Run under mpirun -np 2 and -np 4.
//
// As in test_collectives.cpp: every rank makes every call whatever happened before (EXPECT_*, never
// ASSERT_* ahead of a communication), or one rank's failure would leave the others waiting.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/mpi_group.h"
#include "dist/process_group.h"
#include "dist_mpi/collective_util.h"
#include "minitorch/allocator.h"
#include "minitorch/ops.h"
#include "test_util.h"

namespace dist = minitorch::dist;
using minitorch::DType;
using minitorch::MemTag;
using minitorch::Tensor;
using namespace mt_mpi;

namespace {
constexpr std::int64_t kMiB = 262144;  // f32 elements in 1 MiB: far above MPI's eager limit (4–64 KiB)
int partner(int r, int n) { return (r ^ 1) < n ? (r ^ 1) : r; }  // 0↔1, 2↔3
}  // namespace

TEST(L05_PointToPoint, RingExchangeWhereEveryRankSendsFirst) {
  // Every rank sends 1 MiB to its right neighbour, then receives from its left. With a blocking
  // MPI_Send this deadlocks: a message this size goes by rendezvous, so each MPI_Send waits for a
  // receive that its receiver, itself stuck in MPI_Send, never posts. The buffered send returns.
  auto& w = dist::world();
  const int n = w.size(), r = w.rank(), right = (r + 1) % n, left = (r + n - 1) % n;
  w.stats().reset();
  Watchdog guard("RingExchangeWhereEveryRankSendsFirst", 60);
  Tensor out = filled(float_pattern, r, kMiB), in = Tensor::zeros({kMiB});
  w.send(out, right, 5);
  w.recv(in, left, 5);
  EXPECT_TRUE(same_bits(in.to_vector(), filled(float_pattern, left, kMiB).to_vector()));
  // Three more in a row before any receive, one per dtype: they arrive in the order sent.
  Tensor a = filled(int_pattern, r, kMiB), b = a.to(DType::bf16);
  Tensor c = Tensor::from_ints(std::vector<std::int32_t>(static_cast<std::size_t>(kMiB), r), {kMiB});
  w.send(a, right, 6);
  w.send(b, right, 6);
  w.send(c, right, 6);
  Tensor ra = Tensor::zeros({kMiB}), rb = Tensor::zeros({kMiB}, DType::bf16), rc = Tensor::zeros({kMiB}, DType::i32);
  w.recv(ra, left, 6);
  w.recv(rb, left, 6);
  w.recv(rc, left, 6);
  EXPECT_TRUE(same_bits(ra.to_vector(), filled(int_pattern, left, kMiB).to_vector()));
  EXPECT_TRUE(same_bits(rb.to_vector(), filled(int_pattern, left, kMiB).to_vector()));
  EXPECT_EQ(rc.to_int_vector(), std::vector<std::int32_t>(static_cast<std::size_t>(kMiB), left));
  // Stats: a send records numel (bytes by dtype), a recv 0.
  const auto& log = w.stats().log;
  EXPECT_EQ(log.size(), 8u);
  EXPECT_EQ(w.stats().elements, 4 * kMiB);
  EXPECT_EQ(w.stats().bytes, kMiB * (4 + 4 + 2 + 4));
  if (log.size() == 8u) {
    EXPECT_EQ(log[0].op, "send");
    EXPECT_EQ(log[1].op, "recv");
    EXPECT_EQ(log[1].elements, 0);
    EXPECT_EQ(log[3].bytes, kMiB * 2);  // the bf16 one
  }
  w.barrier();
  w.stats().reset();
}

TEST(L05_PointToPoint, SendReturnsBeforeTheReceiverAndTheTensorIsReusable) {
  // The receiver posts its receive only after a barrier that the sender reaches after overwriting
  // its tensor: a send that did not copy would deliver the overwritten data, a send (or barrier) that
  // waited for the receiver would deadlock.
  // A fresh group: no buffered sends of earlier tests that could finish (and free comm memory) meanwhile.
  auto g = dist::world().split(0, dist::world().rank());
  const int n = g->size(), r = g->rank(), right = (r + 1) % n, left = (r + n - 1) % n;
  Watchdog guard("SendReturnsBeforeTheReceiverAndTheTensorIsReusable", 60);
  Tensor t = filled(float_pattern, r, kMiB);
  const std::int64_t comm_before = minitorch::memory_stats().current(MemTag::comm);
  g->send(t, right, 9);
  // The staging copy is comm memory, kept (with its request) by the group until the transfer is done.
  EXPECT_GE(minitorch::memory_stats().current(MemTag::comm) - comm_before, kMiB * 4);
  auto* mpi = dynamic_cast<dist::MpiGroup*>(g.get());
  EXPECT_NE(mpi, nullptr);
  if (mpi) {
    EXPECT_EQ(mpi->pending_sends(), 1u);
  }
  t.fill_(-1.f);
  g->barrier();
  Tensor got = Tensor::zeros({kMiB});
  g->recv(got, left, 9);
  EXPECT_TRUE(same_bits(got.to_vector(), filled(float_pattern, left, kMiB).to_vector()));
  EXPECT_EQ(g->stats().elements, kMiB);
  // Destroying the group waits for its buffered send, which the receive above has matched.
  g.reset();
}

TEST(L05_PointToPoint, PairwiseExchangeWithIsendIrecv) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank(), p = partner(r, n);
  w.stats().reset();
  Watchdog guard("PairwiseExchangeWithIsendIrecv", 60);
  if (p != r) {
    // Both partners start the send first, compute, then wait in either order.
    for (bool recv_first : {false, true}) {
      Tensor out = filled(float_pattern, r, kMiB + 3).to(DType::bf16), in = Tensor::zeros({kMiB + 3}, DType::bf16);
      auto s = w.isend(out, p, 11);
      auto q = w.irecv(in, p, 11);
      Tensor x = minitorch::ops::matmul(Tensor::ones({64, 64}), Tensor::ones({64, 64}));  // work in between
      EXPECT_EQ(x.at({0, 0}), 64.f);
      q->test();
      if (recv_first) q->wait();
      s->wait();
      q->wait();
      EXPECT_TRUE(s->test());
      EXPECT_TRUE(q->test());
      EXPECT_TRUE(same_bits(in.to_vector(), filled(float_pattern, p, kMiB + 3).to(DType::bf16).to_vector()));
    }
    // Blocking send then recv on both sides of the pair: the same exchange, buffered.
    Tensor out = filled(int_pattern, r, kMiB), in = Tensor::zeros({kMiB});
    w.send(out, p, 12);
    w.recv(in, p, 12);
    EXPECT_TRUE(same_bits(in.to_vector(), filled(int_pattern, p, kMiB).to_vector()));
    // isend / irecv record like send / recv: numel (here bf16: 2 bytes each), then 0.
    const auto& log = w.stats().log;
    EXPECT_EQ(log.size(), 6u);
    EXPECT_EQ(w.stats().elements, 3 * kMiB + 6);
    EXPECT_EQ(w.stats().bytes, 2 * (kMiB + 3) * 2 + kMiB * 4);
    if (log.size() == 6u) {
      EXPECT_EQ(log[0].op, "send");
      EXPECT_EQ(log[1].op, "recv");
    }
    // A Work dropped without wait() finishes in its destructor.
    Tensor dropped = Tensor::zeros({3});
    {
      auto s2 = w.isend(Tensor::full({3}, static_cast<float>(r)), p, 13);
      auto q2 = w.irecv(dropped, p, 13);
    }
    EXPECT_EQ(dropped.to_vector(), std::vector<float>(3, static_cast<float>(p)));
  }
  w.barrier();
  w.stats().reset();
}

TEST(L05_PointToPoint, ShortMessageAndNotRecording) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank(), p = partner(r, n);
  w.stats().reset();
  if (p != r) {
    dist::NoRecordScope quiet(w);
    // The even rank sends 3 elements where its partner expects 5: wait() names the mismatch.
    if (r % 2 == 0) {
      w.send(Tensor::ones({3}), p, 14);
    } else {
      Tensor five = Tensor::zeros({5});
      auto q = w.irecv(five, p, 14);
      EXPECT_TRUE(mt_test::contains(mt_test::error_of([&] { q->wait(); }), "irecv: expected 5 elements from rank"));
    }
  }
  EXPECT_EQ(w.stats().calls, 0);  // nothing recorded while recording is off
  w.barrier();
}

TEST(L05_PointToPoint, BadArgumentsGetOneClearError) {
  auto& w = dist::world();
  w.stats().reset();
  using mt_test::contains;
  using mt_test::error_of;
  Tensor t = Tensor::zeros({3});
  const int other = (w.rank() + 1) % w.size();
  EXPECT_TRUE(contains(error_of([&] { w.isend(t, w.rank()); }), "isend: rank"));
  EXPECT_TRUE(contains(error_of([&] { w.isend(t, w.rank()); }), "cannot send to itself"));
  EXPECT_TRUE(contains(error_of([&] { w.irecv(t, w.rank()); }), "irecv: rank"));
  EXPECT_TRUE(contains(error_of([&] { w.irecv(t, w.size()); }), "irecv: source"));
  EXPECT_TRUE(contains(error_of([&] { w.send(t, other, 40000); }), "send: tag 40000 is not in [0, 32767]"));
  Tensor view = Tensor::zeros({4, 3}).transpose(0, 1);
  EXPECT_TRUE(contains(error_of([&] { w.isend(view, other); }), "isend: expected a contiguous CPU tensor"));
  EXPECT_TRUE(contains(error_of([&] { w.recv(view, other); }), "recv: expected a contiguous CPU tensor"));
  EXPECT_THROW(w.isend(t, -1), std::invalid_argument);
  EXPECT_EQ(w.stats().calls, 0);
}
