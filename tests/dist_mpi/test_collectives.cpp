// Lesson 05 — collectives on N ranks (run under mpirun -np 2 and -np 4). Every rank fills its tensor
// with a rank-dependent deterministic pattern, so every rank can compute the expected result locally
// and compare. Each test runs both algorithms: the MPI library's collectives and the hand-written ring.
//
// Rule for this file: every collective is called on every rank whatever happened before (EXPECT_*,
// never ASSERT_* ahead of a collective), or one rank's failure would leave the others waiting.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "dist_mpi/collective_util.h"
#include "test_util.h"

namespace dist = minitorch::dist;
using dist::Algorithm;
using dist::ProcessGroup;
using dist::ReduceOp;
using minitorch::DType;
using minitorch::Tensor;

namespace {

using namespace mt_mpi;

std::vector<std::int64_t> sizes(int n) {
  std::vector<std::int64_t> s = {1, 7, 1000003};
  if (n - 1 != 1) s.insert(s.begin() + 1, n - 1);
  return s;
}

}  // namespace

TEST(L05_Collectives, WorldHasEveryRank) {
  auto& w = dist::world();
  int size = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  EXPECT_EQ(w.size(), size);
  EXPECT_EQ(w.rank(), rank);
  EXPECT_TRUE(dist::initialized());
  EXPECT_EQ(&dist::init(nullptr, nullptr), &w);  // a second init returns the same world
}

TEST(L05_Collectives, AllReduceSumMatchesDirectSum) {
  auto& w = dist::world();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    for (std::int64_t numel : sizes(w.size())) {
      Tensor t = filled(int_pattern, w.rank(), numel);
      w.all_reduce(t);
      EXPECT_TRUE(same_bits(t.to_vector(), direct_sum(int_pattern, w.size(), numel))) << tag(a, numel);
    }
    // Shape does not matter, only numel: a (3, 5) tensor.
    Tensor m = filled(int_pattern, w.rank(), 15).reshape({3, 5});
    w.all_reduce(m);
    EXPECT_EQ(m.shape(), (minitorch::Shape{3, 5}));
    EXPECT_TRUE(same_bits(m.to_vector(), direct_sum(int_pattern, w.size(), 15))) << tag(a, 15);
  }
}

TEST(L05_Collectives, AllReduceFloatsWithinTolerance) {
  auto& w = dist::world();
  const std::int64_t numel = 10007;
  auto expect = direct_sum(float_pattern, w.size(), numel);
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    Tensor t = filled(float_pattern, w.rank(), numel);
    w.all_reduce(t);
    auto got = t.to_vector();
    int bad = 0;
    for (std::int64_t i = 0; i < numel; ++i) bad += std::fabs(got[i] - expect[i]) > 1e-6f;
    EXPECT_EQ(bad, 0) << tag(a, numel);
  }
}

TEST(L05_Collectives, AllReduceAvg) {
  auto& w = dist::world();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    for (std::int64_t numel : sizes(w.size())) {
      Tensor t = filled(int_pattern, w.rank(), numel);
      w.all_reduce(t, ReduceOp::avg);
      auto sum = direct_sum(int_pattern, w.size(), numel);
      for (auto& x : sum) x = x / static_cast<float>(w.size());
      EXPECT_TRUE(same_bits(t.to_vector(), sum)) << tag(a, numel);
    }
  }
}

// max: the element-wise largest on every rank (the vocabulary-parallel softmax's row maxima), in both
// algorithms (the ring sums only, so MPI's MPI_MAX runs under either), blocking and async, f32 and bf16;
// it records an all-reduce's bytes. A reduce-scatter refuses it.
TEST(L05_Collectives, AllReduceMaxIsTheLargestOnEveryRank) {
  auto& w = dist::world();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    for (std::int64_t numel : sizes(w.size())) {
      std::vector<float> want(static_cast<std::size_t>(numel), -1e30f);
      for (int r = 0; r < w.size(); ++r)
        for (std::int64_t i = 0; i < numel; ++i)
          want[static_cast<std::size_t>(i)] = std::max(want[static_cast<std::size_t>(i)], float_pattern(r, i));
      Tensor t = filled(float_pattern, w.rank(), numel), u = filled(float_pattern, w.rank(), numel);
      w.stats().reset();
      w.all_reduce(t, ReduceOp::max);
      EXPECT_TRUE(same_bits(t.to_vector(), want)) << tag(a, numel);
      EXPECT_EQ(w.stats().elements, dist::all_reduce_volume(numel, w.size(), w.rank())) << tag(a, numel);
      w.all_reduce_async(u, ReduceOp::max)->wait();
      EXPECT_TRUE(same_bits(u.to_vector(), want)) << tag(a, numel);
      Tensor h = filled(float_pattern, w.rank(), numel).to(DType::bf16);
      w.all_reduce(h, ReduceOp::max);
      EXPECT_TRUE(same_bits(h.to_vector(), Tensor::from_vector(want, {numel}).to(DType::bf16).to_vector()))
          << tag(a, numel);
    }
  }
  Tensor in = Tensor::zeros({2 * w.size()});
  try {
    (void)w.reduce_scatter(in, ReduceOp::max);
    ADD_FAILURE() << "reduce_scatter with ReduceOp::max did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ReduceOp::max is for all_reduce only"), std::string::npos) << e.what();
  }
  w.stats().reset();
}

TEST(L05_Collectives, AllReduceBf16SumsInF32) {
  auto& w = dist::world();
  std::vector<float> results[2];
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    const std::int64_t numel = 1001;
    Tensor t = filled(int_pattern, w.rank(), numel).to(DType::bf16);
    w.all_reduce(t);
    EXPECT_EQ(t.dtype(), DType::bf16);
    EXPECT_TRUE(same_bits(t.to_vector(), direct_sum(int_pattern, w.size(), numel))) << tag(a, numel);
    EXPECT_EQ(w.stats().bytes, dist::all_reduce_volume(numel, w.size(), w.rank()) * 2);  // 2 bytes per element
    // Pseudo-random values: the f32 sum is rounded to bf16 once, at the end.
    Tensor f = filled(float_pattern, w.rank(), numel).to(DType::bf16);
    Tensor f_wide = f.to(DType::f32);
    w.all_reduce(f);
    w.all_reduce(f_wide);
    EXPECT_TRUE(same_bits(f.to_vector(), f_wide.to(DType::bf16).to_vector())) << tag(a, numel);
    results[a == Algorithm::ring] = f.to_vector();
  }
  if (w.size() == 2) {
    EXPECT_TRUE(same_bits(results[0], results[1]));
  }
}

TEST(L05_Collectives, ReduceScatterUnevenSizes) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    auto all = sizes(n);
    all.insert(all.begin(), 0);
    for (std::int64_t numel : all) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
        Tensor in = filled(int_pattern, r, numel);
        Tensor before = in.clone();
        Tensor out = w.reduce_scatter(in, op);
        auto sum = direct_sum(int_pattern, n, numel);
        std::vector<float> expect(sum.begin() + my_offset(numel, n, r),
                                  sum.begin() + my_offset(numel, n, r) + my_chunk(numel, n, r));
        if (op == ReduceOp::avg)
          for (auto& x : expect) x = x / static_cast<float>(n);
        EXPECT_EQ(out.numel(), my_chunk(numel, n, r)) << tag(a, numel);
        EXPECT_TRUE(same_bits(out.to_vector(), expect)) << tag(a, numel);
        EXPECT_TRUE(same_bits(in.to_vector(), before.to_vector())) << "input changed: " << tag(a, numel);
      }
    }
  }
}

TEST(L05_Collectives, AllGatherUnevenSizes) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    auto all = sizes(n);
    all.insert(all.begin(), 0);
    for (std::int64_t numel : all) {
      // Element i of the whole is float_pattern(owner of i, i): only its owner knows it.
      std::vector<float> expect(static_cast<std::size_t>(numel));
      for (int q = 0; q < n; ++q)
        for (std::int64_t i = my_offset(numel, n, q); i < my_offset(numel, n, q) + my_chunk(numel, n, q); ++i)
          expect[static_cast<std::size_t>(i)] = float_pattern(q, i);
      Tensor chunk = filled(float_pattern, r, my_chunk(numel, n, r), my_offset(numel, n, r));
      Tensor full = w.all_gather(chunk, numel);
      EXPECT_EQ(full.numel(), numel);
      EXPECT_TRUE(same_bits(full.to_vector(), expect)) << tag(a, numel);
      // bf16 and i32 chunks too (moved, never summed).
      Tensor hb = w.all_gather(chunk.to(DType::bf16), numel);
      EXPECT_EQ(hb.dtype(), DType::bf16);
      EXPECT_TRUE(same_bits(hb.to_vector(), Tensor::from_vector(expect, {numel}).to(DType::bf16).to_vector()));
      std::vector<std::int32_t> ints(static_cast<std::size_t>(my_chunk(numel, n, r)), r + 1);
      auto gathered = w.all_gather(Tensor::from_ints(ints, {my_chunk(numel, n, r)}), numel).to_int_vector();
      int wrong = 0;
      for (int q = 0; q < n; ++q)
        for (std::int64_t i = my_offset(numel, n, q); i < my_offset(numel, n, q) + my_chunk(numel, n, q); ++i)
          wrong += gathered[static_cast<std::size_t>(i)] != q + 1;
      EXPECT_EQ(wrong, 0) << tag(a, numel);
    }
  }
}

TEST(L05_Collectives, ReduceScatterThenAllGatherIsAllReduce) {
  auto& w = dist::world();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    const std::int64_t numel = 1000003;
    Tensor t = filled(float_pattern, w.rank(), numel);
    Tensor reduced = t.clone();
    w.all_reduce(reduced);
    Tensor two_step = w.all_gather(w.reduce_scatter(t), numel);
    // The ring's all-reduce *is* these two phases: bit for bit. MPI may pick different algorithms
    // (orders) for MPI_Allreduce and MPI_Reduce_scatter beyond 2 ranks: float tolerance there.
    if (a == Algorithm::ring || w.size() == 2) {
      EXPECT_TRUE(same_bits(two_step.to_vector(), reduced.to_vector())) << tag(a, numel);
    } else {
      auto x = two_step.to_vector(), y = reduced.to_vector();
      int bad = 0;
      for (std::size_t k = 0; k < x.size(); ++k) bad += std::fabs(x[k] - y[k]) > 1e-6f;
      EXPECT_EQ(bad, 0) << tag(a, numel);
    }
  }
}

TEST(L05_Collectives, BroadcastFromNonZeroRoot) {
  auto& w = dist::world();
  const int root = w.size() - 1;
  for (std::int64_t numel : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1000003}}) {
    Tensor t = filled(float_pattern, w.rank(), numel);
    w.broadcast(t, root);
    EXPECT_TRUE(same_bits(t.to_vector(), filled(float_pattern, root, numel).to_vector())) << numel;
  }
  Tensor ints = Tensor::from_ints({w.rank(), w.rank() * 10}, {2});
  w.broadcast(ints, root);
  EXPECT_EQ(ints.to_int_vector(), (std::vector<std::int32_t>{root, root * 10}));
}

TEST(L05_Collectives, SendRecvAroundTheRing) {
  // A token goes 0 → 1 → … → N−1 → 0; each rank adds its pattern. Big enough (4 MB) that MPI_Send
  // cannot finish on eager buffering alone: the order (rank 0 sends first, the others receive first)
  // is what keeps it from deadlocking.
  auto& w = dist::world();
  const int n = w.size(), r = w.rank(), right = (r + 1) % n, left = (r + n - 1) % n;
  const std::int64_t numel = 1000003;
  w.stats().reset();
  Tensor token = Tensor::zeros({numel});
  if (r == 0) {
    token.copy_(filled(int_pattern, 0, numel));
    w.send(token, right, 3);
    w.recv(token, left, 3);
    EXPECT_TRUE(same_bits(token.to_vector(), direct_sum(int_pattern, n, numel)));
  } else {
    w.recv(token, left, 3);
    Tensor mine = filled(int_pattern, r, numel);
    auto v = token.to_vector(), m = mine.to_vector();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += m[i];
    token = Tensor::from_vector(v, {numel});
    w.send(token, right, 3);
  }
  // Stats count what a rank sends: one send of numel, one recv of nothing.
  EXPECT_EQ(w.stats().elements, numel);
  EXPECT_EQ(w.stats().bytes, numel * 4);
  EXPECT_EQ(w.stats().calls, 2);
  w.stats().reset();
}

TEST(L05_Collectives, SubGroupsOfEvenAndOddRanks) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  auto parity = w.split(r % 2, r);
  EXPECT_NE(parity, nullptr);
  if (!parity) return;  // every rank got one, or every rank failed the same way
  const int members = (n + 1 - r % 2) / 2;
  EXPECT_EQ(parity->size(), members);
  EXPECT_EQ(parity->rank(), r / 2);
  for (Algorithm a : kAlgorithms) {
    parity->set_algorithm(a);
    parity->stats().reset();
    w.stats().reset();
    const std::int64_t numel = 1003;
    Tensor t = filled(int_pattern, r, numel);
    parity->all_reduce(t);
    std::vector<float> expect(static_cast<std::size_t>(numel), 0.f);
    for (int q = r % 2; q < n; q += 2)
      for (std::int64_t i = 0; i < numel; ++i) expect[static_cast<std::size_t>(i)] += int_pattern(q, i);
    EXPECT_TRUE(same_bits(t.to_vector(), expect)) << tag(a, numel);
    // Uneven reduce-scatter inside the sub-group, ranks numbered within it.
    Tensor chunk = parity->reduce_scatter(filled(int_pattern, r, numel));
    EXPECT_EQ(chunk.numel(), my_chunk(numel, members, r / 2));
    // The sub-group's traffic is recorded in its own stats, not the world's.
    EXPECT_EQ(parity->stats().elements,
              dist::all_reduce_volume(numel, members, r / 2) + dist::reduce_scatter_volume(numel, members, r / 2));
    EXPECT_EQ(w.stats().calls, 0);
  }
  // Split inherits the algorithm; a negative color joins no group.
  w.set_algorithm(Algorithm::ring);
  auto only_rest = w.split(r == 0 ? -1 : 0, r);
  w.set_algorithm(Algorithm::mpi);
  EXPECT_EQ(only_rest == nullptr, r == 0);
  if (only_rest) {
    EXPECT_EQ(only_rest->size(), n - 1);
    EXPECT_EQ(only_rest->algorithm(), Algorithm::ring);
  }
  w.stats().reset();
}

TEST(L05_Collectives, AsyncAllReduceOverlapsOtherWork) {
  auto& w = dist::world();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    // Three "buckets" started in order, waited in reverse: the results do not depend on it.
    std::vector<Tensor> buckets;
    std::vector<std::unique_ptr<dist::Work>> works;
    const std::int64_t numels[] = {1000003, 7, 4096};
    for (int b = 0; b < 3; ++b) {
      buckets.push_back(filled(int_pattern, w.rank() + b, numels[b]));
      works.push_back(w.all_reduce_async(buckets.back(), b == 1 ? ReduceOp::avg : ReduceOp::sum));
    }
    volatile double busy = 0;  // "backward" keeps computing while the transfers are in flight
    for (int i = 0; i < 100000; ++i) busy = busy + std::sqrt(static_cast<double>(i));
    works[0]->test();
    for (int b = 2; b >= 0; --b) {
      works[static_cast<std::size_t>(b)]->wait();
      EXPECT_TRUE(works[static_cast<std::size_t>(b)]->test());
      std::vector<float> expect(static_cast<std::size_t>(numels[b]), 0.f);
      for (int q = 0; q < w.size(); ++q)
        for (std::int64_t i = 0; i < numels[b]; ++i) expect[static_cast<std::size_t>(i)] += int_pattern(q + b, i);
      if (b == 1)
        for (auto& x : expect) x = x / static_cast<float>(w.size());
      EXPECT_TRUE(same_bits(buckets[static_cast<std::size_t>(b)].to_vector(), expect)) << tag(a, numels[b]);
    }
    // Recorded when started, with the all-reduce volume.
    std::int64_t expect_elements = 0;
    for (auto n_b : numels) expect_elements += dist::all_reduce_volume(n_b, w.size(), w.rank());
    EXPECT_EQ(w.stats().elements, expect_elements);
    // bf16 async: summed in f32, rounded once when waited.
    Tensor h = filled(int_pattern, w.rank(), 33).to(DType::bf16);
    auto work = w.all_reduce_async(h);
    work->wait();
    EXPECT_TRUE(same_bits(h.to_vector(), direct_sum(int_pattern, w.size(), 33)));
    // A Work dropped without wait() finishes in its destructor.
    Tensor dropped = filled(int_pattern, w.rank(), 5);
    w.all_reduce_async(dropped);
    EXPECT_TRUE(same_bits(dropped.to_vector(), direct_sum(int_pattern, w.size(), 5)));
  }
}

TEST(L05_T3_Ring, MatchesMpiBitForBitWhereTheOrderIsTheSame) {
  auto& w = dist::world();
  const std::int64_t numel = 100003;
  std::vector<float> out[2], rs[2], ag[2];
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    const int i = a == Algorithm::ring;
    Tensor t = filled(float_pattern, w.rank(), numel);
    w.all_reduce(t);
    out[i] = t.to_vector();
    rs[i] = w.reduce_scatter(filled(float_pattern, w.rank(), numel)).to_vector();
    Tensor chunk = filled(float_pattern, w.rank(), my_chunk(numel, w.size(), w.rank()));
    ag[i] = w.all_gather(chunk, numel).to_vector();
  }
  // All-gather only moves data: identical whatever N. With 2 ranks a sum is one addition, and a + b
  // == b + a exactly, so the reductions match to the last bit too.
  EXPECT_TRUE(same_bits(ag[0], ag[1]));
  if (w.size() == 2) {
    EXPECT_TRUE(same_bits(out[0], out[1]));
    EXPECT_TRUE(same_bits(rs[0], rs[1]));
  } else {  // the orders differ (MPI's tree vs the ring): float tolerance
    int bad = 0;
    for (std::size_t k = 0; k < out[0].size(); ++k) bad += std::fabs(out[0][k] - out[1][k]) > 1e-6f;
    EXPECT_EQ(bad, 0);
  }
}

TEST(L05_T3_Ring, SumsEachChunkInRingOrderDeterministically) {
  // Chunk c starts at its owner's right neighbour and goes round: ((x[c+1] + x[c+2]) + …) + x[c].
  // Computing exactly that locally reproduces the ring's result to the last bit, run after run.
  auto& w = dist::world();
  const int n = w.size();
  const std::int64_t numel = 10007;
  UseAlgorithm use(w, Algorithm::ring);
  std::vector<float> expect(static_cast<std::size_t>(numel));
  for (int c = 0; c < n; ++c)
    for (std::int64_t i = my_offset(numel, n, c); i < my_offset(numel, n, c) + my_chunk(numel, n, c); ++i) {
      float acc = float_pattern((c + 1) % n, i);
      for (int k = 2; k <= n; ++k) acc = acc + float_pattern((c + k) % n, i);
      expect[static_cast<std::size_t>(i)] = acc;
    }
  for (int run = 0; run < 2; ++run) {
    Tensor t = filled(float_pattern, w.rank(), numel);
    w.all_reduce(t);
    EXPECT_TRUE(same_bits(t.to_vector(), expect)) << "run " << run;
  }
}

TEST(L05_Collectives, BytesPerRankMatchTheRingFormula) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    // The ZeRO-paper number: an all-reduce of Ψ elements (N | Ψ) sends 2·(N−1)/N·Ψ elements per rank.
    const std::int64_t psi = 1000 * n;
    Tensor g = filled(int_pattern, r, psi);
    w.all_reduce(g);
    EXPECT_EQ(w.stats().elements, 2 * (n - 1) * psi / n) << dist::algorithm_name(a);
    EXPECT_EQ(w.stats().bytes, 2 * (n - 1) * psi / n * 4) << dist::algorithm_name(a);
    EXPECT_EQ(w.stats().calls, 1);

    // Every collective, uneven sizes: the elements this rank sends in the ring, computed here.
    for (std::int64_t numel : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1003}}) {
      w.stats().reset();
      const std::int64_t rs = numel - my_chunk(numel, n, r);            // all chunks but mine
      const std::int64_t ag = numel - my_chunk(numel, n, (r + 1) % n);  // all but my right neighbour's
      Tensor t = filled(int_pattern, r, numel);
      w.all_reduce(t);
      Tensor part = w.reduce_scatter(t);
      Tensor whole = w.all_gather(part, numel);
      w.broadcast(whole, 1 % n);  // chain 1 → 2 → … → 0: the last one, rank 0, sends nothing
      w.all_reduce_async(t)->wait();
      w.barrier();
      const auto& log = w.stats().log;
      EXPECT_EQ(log.size(), 5u);
      if (log.size() != 5u) continue;
      EXPECT_EQ(log[0].op, "all_reduce");
      EXPECT_EQ(log[0].elements, rs + ag) << tag(a, numel);
      EXPECT_EQ(log[1].op, "reduce_scatter");
      EXPECT_EQ(log[1].elements, rs) << tag(a, numel);
      EXPECT_EQ(log[2].op, "all_gather");
      EXPECT_EQ(log[2].elements, ag) << tag(a, numel);
      EXPECT_EQ(log[3].op, "broadcast");
      EXPECT_EQ(log[3].elements, r == 0 ? 0 : numel) << tag(a, numel);
      EXPECT_EQ(log[4].elements, rs + ag);
      for (const auto& rec : log) EXPECT_EQ(rec.bytes, rec.elements * 4) << rec.op;
      EXPECT_EQ(w.stats().elements, 3 * (rs + ag) + (r == 0 ? 0 : numel));

      // Over all ranks, a ring phase sends (N−1)·numel: each chunk travels N−1 links.
      std::int64_t mine[2] = {log[1].elements, log[2].elements}, total[2] = {0, 0};
      MPI_Allreduce(mine, total, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      EXPECT_EQ(total[0], (n - 1) * numel);
      EXPECT_EQ(total[1], (n - 1) * numel);
    }
  }
}

TEST(L05_Collectives, NoRecordScopeMovesDataButRecordsNothing) {
  auto& w = dist::world();
  w.stats().reset();
  Tensor loss = Tensor::from_vector({static_cast<float>(w.rank())}, {1});
  {
    dist::NoRecordScope quiet(w);
    EXPECT_FALSE(w.recording());
    w.all_reduce(loss, ReduceOp::avg);
  }
  EXPECT_TRUE(w.recording());
  EXPECT_FLOAT_EQ(loss.item(), (w.size() - 1) / 2.f);
  EXPECT_EQ(w.stats().calls, 0);
  EXPECT_EQ(w.stats().bytes, 0);
}

TEST(L05_Collectives, BadTensorsGetOneClearError) {
  // Checked before any communication, identically on every rank: safe to throw.
  auto& w = dist::world();
  w.stats().reset();
  using mt_test::contains;
  using mt_test::error_of;
  Tensor m = Tensor::zeros({4, 3});
  Tensor view = m.transpose(0, 1);
  EXPECT_THROW(w.all_reduce(view), std::invalid_argument);
  EXPECT_TRUE(contains(error_of([&] { w.all_reduce(view); }), "all_reduce: expected a contiguous CPU tensor"));
  Tensor ints = Tensor::from_ints({1, 2, 3}, {3});
  EXPECT_TRUE(contains(error_of([&] { w.all_reduce(ints); }), "reductions take f32, bf16 or f16"));
  EXPECT_TRUE(contains(error_of([&] { w.reduce_scatter(view); }), "reduce_scatter"));
  EXPECT_TRUE(contains(error_of([&] { w.all_gather(Tensor::zeros({5}), 1000); }), "all_gather: rank"));
  Tensor t = Tensor::zeros({3});
  EXPECT_TRUE(contains(error_of([&] { w.broadcast(t, w.size()); }), "not a rank of this group"));
  EXPECT_TRUE(contains(error_of([&] { w.send(t, w.rank()); }), "cannot send to itself"));
  EXPECT_TRUE(contains(error_of([&] { w.recv(t, -1); }), "not a rank of this group"));
  Tensor undefined;
  EXPECT_TRUE(contains(error_of([&] { w.all_reduce_async(undefined); }), "undefined tensor"));
  EXPECT_EQ(w.stats().calls, 0);  // nothing recorded for a collective that did not run
  w.stats().reset();
}
