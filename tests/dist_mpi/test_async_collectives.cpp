// Lesson 05 — the ZeRO forms of reduce-scatter and all-gather on N ranks: asynchronous (overlapped
// with compute), into buffers the caller owns, in place, and their byte accounting. Run under mpirun
// -np 2 and -np 4, both algorithms, f32 and bf16, sizes that N does not divide.
//
// As in test_collectives.cpp: every rank makes every call whatever happened before (EXPECT_*, never
// ASSERT_* ahead of a collective), or one rank's failure would leave the others waiting.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "dist_mpi/collective_util.h"
#include "minitorch/ops.h"
#include "test_util.h"

namespace dist = minitorch::dist;
using dist::Algorithm;
using dist::ReduceOp;
using minitorch::DType;
using minitorch::Tensor;
using namespace mt_mpi;

namespace {

/// Sizes N does not divide (for N = 2 and 4), the last one big enough for MPI to take several rounds.
const std::int64_t kUneven[] = {1, 7, 1001, 100003};

/// Compute between start and wait: a matmul that allocates and frees buffers the size of the inputs,
/// so a collective that let its input die would read reused memory.
void busy_compute() {
  Tensor a = Tensor::full({128, 128}, 0.5f);  // each product: 128 · 0.5 · (1/128) = 0.5, exactly
  for (int i = 0; i < 3; ++i) a = minitorch::ops::matmul(a, Tensor::full({128, 128}, 1.f / 128.f));
  EXPECT_EQ(a.at({0, 0}), 0.5f);
}

std::string what(Algorithm a, DType d, std::int64_t numel) { return tag(a, numel) + " " + minitorch::dtype_name(d); }

}  // namespace

TEST(L05_AsyncCollectives, ReduceScatterOverlappedMatchesSync) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    for (DType d : {DType::f32, DType::bf16})
      for (std::int64_t numel : kUneven)
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
          const Tensor in = filled(float_pattern, r, numel).to(d);
          const Tensor sync = w.reduce_scatter(in, op);
          // Allocating async, with an input that is a temporary: the Work must keep it alive.
          dist::AsyncTensor pending = w.reduce_scatter_async(filled(float_pattern, r, numel).to(d), op);
          busy_compute();
          pending.work->test();
          Tensor got = pending.wait();
          // Into a buffer of ours.
          Tensor mine = Tensor::full({my_chunk(numel, n, r)}, 99.f, d);
          void* before = mine.raw_data();
          auto work = w.reduce_scatter_into_async(mine, in, op);
          busy_compute();
          work->wait();
          EXPECT_EQ(mine.raw_data(), before);
          EXPECT_EQ(got.dtype(), d);
          EXPECT_TRUE(same_bits(got.to_vector(), sync.to_vector())) << what(a, d, numel);
          EXPECT_TRUE(same_bits(mine.to_vector(), sync.to_vector())) << what(a, d, numel);
        }
    // Exact values (small integers: any summation order), so "the same as sync" is also right.
    for (std::int64_t numel : kUneven) {
      auto sum = direct_sum(int_pattern, n, numel);
      std::vector<float> expect(sum.begin() + my_offset(numel, n, r), sum.begin() + my_offset(numel, n, r) + my_chunk(numel, n, r));
      dist::AsyncTensor pending = w.reduce_scatter_async(filled(int_pattern, r, numel).to(DType::bf16));
      busy_compute();
      EXPECT_TRUE(same_bits(pending.wait().to_vector(), expect)) << tag(a, numel);
    }
  }
}

TEST(L05_AsyncCollectives, AllGatherOverlappedMatchesSync) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    for (DType d : {DType::f32, DType::bf16, DType::i32})
      for (std::int64_t numel : kUneven) {
        // Element i of the whole is float_pattern(owner of i, i) (i32: its owner's rank + i).
        std::vector<float> whole(static_cast<std::size_t>(numel));
        for (int q = 0; q < n; ++q)
          for (std::int64_t i = my_offset(numel, n, q); i < my_offset(numel, n, q) + my_chunk(numel, n, q); ++i)
            whole[static_cast<std::size_t>(i)] = d == DType::i32 ? static_cast<float>(q + i) : float_pattern(q, i);
        auto make_chunk = [&] {
          const std::int64_t off = my_offset(numel, n, r), m = my_chunk(numel, n, r);
          if (d != DType::i32) return filled(float_pattern, r, m, off).to(d);
          std::vector<std::int32_t> v;
          for (std::int64_t i = off; i < off + m; ++i) v.push_back(static_cast<std::int32_t>(r + i));
          return Tensor::from_ints(v, {m});
        };
        const Tensor expect = d == DType::i32 ? Tensor::from_vector(whole, {numel}).to(DType::i32)
                                              : Tensor::from_vector(whole, {numel}).to(d);
        const Tensor sync = w.all_gather(make_chunk(), numel);
        dist::AsyncTensor pending = w.all_gather_async(make_chunk(), numel);  // a temporary chunk
        busy_compute();
        Tensor got = pending.wait();
        Tensor out = Tensor::zeros({numel}, d);
        void* before = out.raw_data();
        auto work = w.all_gather_into_async(out, make_chunk());
        busy_compute();
        work->wait();
        EXPECT_EQ(out.raw_data(), before);
        EXPECT_TRUE(same_bits(sync.to_vector(), expect.to_vector())) << what(a, d, numel);
        EXPECT_TRUE(same_bits(got.to_vector(), sync.to_vector())) << what(a, d, numel);
        EXPECT_TRUE(same_bits(out.to_vector(), sync.to_vector())) << what(a, d, numel);
        // In place: the shard is the output's own chunk (ZeRO-3's flat buffer), sync and async.
        for (bool async : {false, true}) {
          Tensor flat = Tensor::zeros({numel}, d);
          Tensor shard = flat.narrow(0, my_offset(numel, n, r), my_chunk(numel, n, r));
          shard.copy_(make_chunk());
          if (async) {
            auto wk = w.all_gather_into_async(flat, shard);
            busy_compute();
            wk->wait();
          } else {
            w.all_gather_into(flat, shard);
          }
          EXPECT_TRUE(same_bits(flat.to_vector(), expect.to_vector())) << "in place " << what(a, d, numel);
        }
      }
  }
}

TEST(L05_AsyncCollectives, SeveralInFlightWaitedInAnyOrder) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  const std::int64_t numel = 100003;
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    // A ZeRO-3 step in miniature: gather the next layer while reducing the last one's gradients.
    Tensor grads = filled(int_pattern, r, numel), full = Tensor::zeros({numel}), reduced = Tensor::zeros({numel});
    Tensor shard_out = Tensor::zeros({my_chunk(numel, n, r)});
    auto rs = w.reduce_scatter_into_async(shard_out, grads, ReduceOp::avg);
    auto ag = w.all_gather_into_async(full, filled(int_pattern, r, my_chunk(numel, n, r), my_offset(numel, n, r)));
    reduced.copy_(grads);
    auto ar = w.all_reduce_async(reduced);
    busy_compute();
    ar->wait();
    ag->wait();
    rs->wait();
    auto sum = direct_sum(int_pattern, n, numel);
    EXPECT_TRUE(same_bits(reduced.to_vector(), sum)) << tag(a, numel);
    std::vector<float> avg(sum.begin() + my_offset(numel, n, r), sum.begin() + my_offset(numel, n, r) + my_chunk(numel, n, r));
    for (auto& x : avg) x = x / static_cast<float>(n);
    EXPECT_TRUE(same_bits(shard_out.to_vector(), avg)) << tag(a, numel);
    std::vector<float> whole(static_cast<std::size_t>(numel));
    for (int q = 0; q < n; ++q)
      for (std::int64_t i = my_offset(numel, n, q); i < my_offset(numel, n, q) + my_chunk(numel, n, q); ++i)
        whole[static_cast<std::size_t>(i)] = int_pattern(q, i);
    EXPECT_TRUE(same_bits(full.to_vector(), whole)) << tag(a, numel);
  }
}

TEST(L05_AsyncCollectives, IntoAViewOfALargerBufferLeavesTheRestAlone) {
  // Outputs may be slices of a flat buffer (narrow along dim 0): only the slice changes. The
  // reduce-scatter's output may even be the input's own chunk (the input is then staged).
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  const std::int64_t numel = 1001, pad = 5;
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    for (DType d : {DType::f32, DType::bf16}) {
      Tensor big = Tensor::full({numel + 2 * pad}, -7.f, d);
      Tensor slice = big.narrow(0, pad, numel);
      w.all_gather_into(slice, filled(int_pattern, r, my_chunk(numel, n, r), my_offset(numel, n, r)).to(d));
      auto v = big.to_vector();
      int outside = 0;
      for (std::int64_t i = 0; i < pad; ++i) outside += (v[i] != -7.f) + (v[numel + pad + i] != -7.f);
      EXPECT_EQ(outside, 0) << what(a, d, numel);
      // In-place reduce-scatter: the input's own chunk receives the sum.
      Tensor grads = filled(int_pattern, r, numel).to(d);
      Tensor own = grads.narrow(0, my_offset(numel, n, r), my_chunk(numel, n, r));
      w.reduce_scatter_into(own, grads);
      auto sum = direct_sum(int_pattern, n, numel);
      std::vector<float> expect(sum.begin() + my_offset(numel, n, r), sum.begin() + my_offset(numel, n, r) + my_chunk(numel, n, r));
      EXPECT_TRUE(same_bits(own.to_vector(), expect)) << what(a, d, numel);
    }
  }
}

TEST(L05_AsyncCollectives, WrongOutputsGetOneClearError) {
  // Checked before any communication, identically on every rank: safe to throw.
  auto& w = dist::world();
  w.stats().reset();
  using mt_test::contains;
  using mt_test::error_of;
  const int n = w.size(), r = w.rank();
  const std::int64_t numel = 7;
  Tensor in = filled(int_pattern, r, numel);
  Tensor wrong = Tensor::zeros({my_chunk(numel, n, r) + 1});
  const std::string rs_size = error_of([&] { w.reduce_scatter_into(wrong, in); });
  EXPECT_TRUE(contains(rs_size, "reduce_scatter_into: output_shard has " + std::to_string(my_chunk(numel, n, r) + 1) +
                                    " elements, but rank " + std::to_string(r) + " of " + std::to_string(n) + " owns " +
                                    std::to_string(my_chunk(numel, n, r)) + " of the input's 7"))
      << rs_size;
  EXPECT_THROW(w.reduce_scatter_into(wrong, in), std::invalid_argument);
  EXPECT_TRUE(contains(error_of([&] { w.reduce_scatter_into_async(wrong, in); }), "reduce_scatter_into_async: output_shard has"));
  Tensor half = Tensor::zeros({my_chunk(numel, n, r)}, DType::bf16);
  EXPECT_TRUE(contains(error_of([&] { w.reduce_scatter_into(half, in); }), "output_shard is bf16 but input is f32"));
  Tensor ints = Tensor::zeros({my_chunk(numel, n, r)}, DType::i32);
  EXPECT_TRUE(contains(error_of([&] { w.reduce_scatter_into(ints, in.to(DType::i32)); }), "reductions take f32, bf16 or f16"));
  Tensor strided = Tensor::zeros({3, 4}).transpose(0, 1);  // never contiguous, on every rank
  Tensor whole = Tensor::zeros({12 * n});
  EXPECT_TRUE(contains(error_of([&] { w.all_gather_into(whole, strided); }), "all_gather_into: shard: expected a contiguous CPU tensor"));
  Tensor out = Tensor::zeros({numel});
  const std::string ag_size = error_of([&] { w.all_gather_into(out, Tensor::zeros({my_chunk(numel, n, r) + 1})); });
  EXPECT_TRUE(contains(ag_size, "all_gather_into: shard has " + std::to_string(my_chunk(numel, n, r) + 1) + " elements"))
      << ag_size;
  EXPECT_TRUE(contains(error_of([&] { w.all_gather_into_async(out, Tensor::zeros({my_chunk(numel, n, r)}, DType::bf16)); }),
                       "all_gather_into_async: output is f32 but shard is bf16"));
  Tensor undefined;
  EXPECT_TRUE(contains(error_of([&] { w.all_gather_into(undefined, in); }), "all_gather_into: output: expected a contiguous CPU tensor, got an undefined tensor"));
  EXPECT_TRUE(contains(error_of([&] { w.all_gather_into(out, undefined); }), "all_gather_into: shard: expected a contiguous CPU tensor, got an undefined tensor"));
  EXPECT_TRUE(contains(error_of([&] { w.all_gather_async(Tensor::zeros({1000}), numel); }), "all_gather_async: rank"));
  EXPECT_EQ(w.stats().calls, 0);  // nothing recorded for a collective that did not run
}

TEST(L05_AsyncCollectives, EveryFormRecordsTheRingVolume) {
  auto& w = dist::world();
  const int n = w.size(), r = w.rank();
  for (Algorithm a : kAlgorithms) {
    UseAlgorithm use(w, a);
    for (DType d : {DType::f32, DType::bf16})
      for (std::int64_t numel : kUneven) {
        w.stats().reset();
        const std::int64_t rs = dist::reduce_scatter_volume(numel, n, r), ag = dist::all_gather_volume(numel, n, r);
        const std::int64_t mine = my_chunk(numel, n, r), bytes = minitorch::dtype_size(d);
        Tensor in = filled(int_pattern, r, numel).to(d), shard = Tensor::zeros({mine}, d), out = Tensor::zeros({numel}, d);
        w.reduce_scatter(in);
        auto p1 = w.reduce_scatter_async(in);
        EXPECT_EQ(w.stats().calls, 2);  // recorded when started, before wait
        p1.wait();
        w.reduce_scatter_into(shard, in);
        w.reduce_scatter_into_async(shard, in)->wait();
        w.all_gather(shard, numel);
        w.all_gather_async(shard, numel).wait();
        w.all_gather_into(out, shard);
        w.all_gather_into_async(out, shard)->wait();
        {
          dist::NoRecordScope quiet(w);  // moves data, records nothing
          w.reduce_scatter_into_async(shard, in)->wait();
          w.all_gather_into_async(out, shard)->wait();
        }
        const auto& log = w.stats().log;
        EXPECT_EQ(log.size(), 8u) << what(a, d, numel);
        for (std::size_t k = 0; k < log.size(); ++k) {
          EXPECT_EQ(log[k].op, k < 4 ? "reduce_scatter" : "all_gather");
          EXPECT_EQ(log[k].elements, k < 4 ? rs : ag) << what(a, d, numel) << " #" << k;
          EXPECT_EQ(log[k].bytes, log[k].elements * static_cast<std::int64_t>(bytes));
        }
        EXPECT_EQ(w.stats().elements, 4 * (rs + ag));
      }
  }
}
