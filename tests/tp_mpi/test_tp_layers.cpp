// Lesson 13 — Megatron's tensor parallelism (tp/) on 2 and 4 ranks, the whole world one tensor group: f and g,
// the column- and row-split linears against the unsplit layers, the vocabulary-split embedding and
// cross-entropy against the plain ones (padding included), the bytes each all-reduce moves, bad splits.
// Every rank draws the same full tensors from the same seed, so every rank can compute the unsplit
// reference itself and compare its own slice.
//
// Rule for this file: every collective is called on every rank whatever happened before (EXPECT_*, never
// ASSERT_* ahead of a collective), or one rank's failure would leave the others waiting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "dist/process_group.h"
#include "gradcheck_helpers.h"
#include "test_util.h"
#include "tp/cross_entropy.h"
#include "tp/layers.h"
#include "tp/regions.h"
#include "tp_mpi/tp_test_util.h"

namespace ag = minitorch::autograd;
namespace dist = minitorch::dist;
namespace tp = minitorch::tp;
using minitorch::DType;
using minitorch::Generator;
using minitorch::Shape;
using minitorch::Tensor;
using mt_test::contains;
using mt_test::error_of;
using mt_test::rand_leaf;
using mt_tp::rel_diff;

namespace {
Tensor leaf(const Shape& shape, Generator& gen, float std = 1.f) {
  return Tensor::randn(shape, gen, 0.f, std).set_requires_grad();
}

/// rows [r·n/t, (r+1)·n/t) of t (dim 0), or of dim `dim`
Tensor slice_of(const Tensor& full, std::int64_t dim, int rank, int size) {
  const std::int64_t part = full.size(dim) / size;
  return full.narrow(dim, rank * part, part).contiguous();
}
}  // namespace

// ---------------- f and g ----------------
TEST(L13_T1_Regions, FIsTheIdentityForwardAndSumsTheGradientBackward) {
  auto& w = dist::world();
  Generator gen(3);
  Tensor x = leaf({3, 4}, gen);  // the same on every rank
  w.stats().reset();
  Tensor y = tp::f(x, w);
  EXPECT_EQ(rel_diff(y, x), 0.0);
  EXPECT_EQ(w.stats().calls, 0) << "f sends nothing forward";
  // Each rank weighs y differently (its own slice of a product, say): x's gradient is the sum of the weights.
  Tensor c = Tensor::full({3, 4}, static_cast<float>(w.rank() + 1));
  ag::backward(ag::sum(ag::mul(y, c)));
  const float want = static_cast<float>(w.size() * (w.size() + 1) / 2);
  EXPECT_EQ(rel_diff(x.grad(), Tensor::full({3, 4}, want)), 0.0);
  EXPECT_EQ(w.stats().calls, 1);
  EXPECT_EQ(w.stats().elements, dist::all_reduce_volume(12, w.size(), w.rank()));
  w.stats().reset();
}

TEST(L13_T1_Regions, GSumsTheRanksForwardAndPassesTheGradientBack) {
  auto& w = dist::world();
  Tensor x = Tensor::full({2, 5}, static_cast<float>(w.rank() + 1)).set_requires_grad();  // a partial sum each
  w.stats().reset();
  Tensor y = tp::g(x, w);
  const float total = static_cast<float>(w.size() * (w.size() + 1) / 2);
  EXPECT_EQ(rel_diff(y, Tensor::full({2, 5}, total)), 0.0);
  EXPECT_EQ(w.stats().calls, 1);
  EXPECT_EQ(w.stats().elements, dist::all_reduce_volume(10, w.size(), w.rank()));
  EXPECT_EQ(rel_diff(x, Tensor::full({2, 5}, static_cast<float>(w.rank() + 1))), 0.0) << "g must not change its input";
  Generator gen(4);
  Tensor c = Tensor::randn({2, 5}, gen);  // the same on every rank, as y is
  ag::backward(ag::sum(ag::mul(y, c)));
  EXPECT_EQ(rel_diff(x.grad(), c), 0.0);
  EXPECT_EQ(w.stats().calls, 1) << "g sends nothing backward";
  w.stats().reset();
}

// ---------------- the split linears ----------------
// The MLP of a block, c_fc (column) → GELU → c_proj (row), against the unsplit one: the output, the input's
// gradient and every parameter gradient's slice; one all-reduce of the activation forward, one backward.
TEST(L13_T2_ParallelLinear, ColumnThenRowIsTheUnsplitMlpWithOneAllReduceEachWay) {
  auto& w = dist::world();
  const int t = w.size(), r = w.rank();
  const std::int64_t B = 2, T = 3, C = 12, H = 4 * C;  // C divisible by t = 2, 3, 4
  Generator gen(11);
  Tensor W1 = leaf({H, C}, gen, 0.2f), b1 = leaf({H}, gen, 0.2f), W2 = leaf({C, H}, gen, 0.2f),
         b2 = leaf({C}, gen, 0.2f);
  Tensor x_ref = leaf({B, T, C}, gen), weights = Tensor::randn({B, T, C}, gen);
  Tensor x = x_ref.detach().clone().set_requires_grad();
  // the unsplit reference, on every rank
  Tensor y_ref = ag::linear(ag::gelu(ag::linear(x_ref, W1, b1)), W2, b2);
  ag::backward(ag::sum(ag::mul(y_ref, weights)));

  tp::ColumnParallelLinear fc(W1.detach(), b1.detach(), w);
  tp::RowParallelLinear proj(W2.detach(), b2.detach(), w);
  EXPECT_EQ(fc.weight.shape(), (Shape{H / t, C}));
  EXPECT_EQ(proj.weight.shape(), (Shape{C, H / t}));
  w.stats().reset();
  Tensor y = proj.forward(ag::gelu(fc.forward(x)));  // (B, T, H/t) in the middle, (B, T, C) whole at the end
  EXPECT_EQ(w.stats().calls, 1) << "forward: g only";
  EXPECT_EQ(w.stats().elements, dist::all_reduce_volume(B * T * C, t, r));
  ag::backward(ag::sum(ag::mul(y, weights)));
  EXPECT_EQ(w.stats().calls, 2) << "backward: f only";
  EXPECT_EQ(w.stats().elements, 2 * dist::all_reduce_volume(B * T * C, t, r));

  EXPECT_LT(rel_diff(y, y_ref), 1e-6);
  EXPECT_LT(rel_diff(x.grad(), x_ref.grad()), 1e-6);
  EXPECT_LT(rel_diff(fc.weight.grad(), slice_of(W1.grad(), 0, r, t)), 1e-6);
  EXPECT_LT(rel_diff(fc.bias.grad(), slice_of(b1.grad(), 0, r, t)), 1e-6);
  EXPECT_LT(rel_diff(proj.weight.grad(), slice_of(W2.grad(), 1, r, t)), 1e-6);
  EXPECT_LT(rel_diff(proj.bias.grad(), b2.grad()), 1e-6);
  w.stats().reset();
}

// Attention's c_attn holds [q | k | v] stacked: each rank must keep its heads' rows of all three.
TEST(L13_T2_ParallelLinear, StackedColumnsKeepEachRanksSliceOfQKAndV) {
  auto& w = dist::world();
  const int t = w.size(), r = w.rank();
  const std::int64_t C = 12, part = C / t;
  Generator gen(12);
  Tensor W = Tensor::randn({3 * C, C}, gen), b = Tensor::randn({3 * C}, gen), x = Tensor::randn({5, C}, gen);
  tp::ColumnParallelLinear qkv(W, b, w, /*stacked=*/3);
  const Tensor y_ref = ag::linear(x, W, b), y = qkv.forward(x);  // (5, 3C) and (5, 3C/t)
  for (std::int64_t block = 0; block < 3; ++block)
    EXPECT_LT(rel_diff(y.narrow(1, block * part, part), y_ref.narrow(1, block * C + r * part, part)), 1e-6)
        << "block " << block;
}

// The constructors' check, not lab task L13.2's forwards: a suite of its own, which a stubbed L13.2 leaves passing.
TEST(L13_ParallelLinearSplit, AnUnevenSplitIsOneClearError) {
  auto& w = dist::world();
  const int t = w.size();
  Generator gen(13);
  const std::int64_t odd = 2 * t + 1;
  const std::string col = error_of([&] { tp::ColumnParallelLinear bad(Tensor::randn({odd, 4}, gen), Tensor(), w); });
  EXPECT_TRUE(contains(col, "ColumnParallelLinear: " + std::to_string(odd) + " rows do not split evenly over a "
                                "tensor-parallel size of " + std::to_string(t)))
      << col;
  const std::string qkv = error_of([&] { tp::ColumnParallelLinear bad(Tensor::randn({3 * odd, 4}, gen), Tensor(), w, 3); });
  EXPECT_TRUE(contains(qkv, "in 3 blocks")) << qkv;
  const std::string row = error_of([&] { tp::RowParallelLinear bad(Tensor::randn({4, odd}, gen), Tensor(), w); });
  EXPECT_TRUE(contains(row, "RowParallelLinear: " + std::to_string(odd) + " input features do not split evenly"))
      << row;
}

// ---------------- the vocabulary split ----------------
TEST(L13_T2_VocabParallelEmbedding, EqualsTheEmbeddingWithThePaddingZero) {
  auto& w = dist::world();
  const int t = w.size(), r = w.rank();
  const std::int64_t V = 300, C = 6, Vp = tp::padded_vocab_size(V, t);
  EXPECT_EQ(Vp, 128 * t * ((V + 128 * t - 1) / (128 * t)));
  Generator gen(21);
  Tensor wte = leaf({V, C}, gen);
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 24; ++i) ids.push_back(static_cast<std::int32_t>(gen.next_below(static_cast<std::uint64_t>(V))));
  ids[0] = 0, ids[1] = static_cast<std::int32_t>(V - 1);  // both ends
  const Tensor idx = Tensor::from_ints(ids, {4, 6});
  Tensor weights = Tensor::randn({4, 6, C}, gen);
  Tensor y_ref = ag::embedding(wte, idx);
  ag::backward(ag::sum(ag::mul(y_ref, weights)));

  tp::VocabParallelEmbedding emb(wte.detach(), w);
  EXPECT_EQ(emb.weight.shape(), (Shape{Vp / t, C}));
  w.stats().reset();
  Tensor y = emb.forward(idx);
  EXPECT_EQ(w.stats().elements, dist::all_reduce_volume(4 * 6 * C, t, r)) << "one all-reduce of (B, T, C)";
  EXPECT_LT(rel_diff(y, y_ref), 1e-7);
  ag::backward(ag::sum(ag::mul(y, weights)));
  const tp::VocabSlice& s = emb.slice;
  if (s.valid > 0) {
    EXPECT_LT(rel_diff(emb.weight.grad().narrow(0, 0, s.valid), wte.grad().narrow(0, s.start, s.valid)), 1e-7);
  }
  if (s.valid < s.rows) {
    EXPECT_EQ(rel_diff(emb.weight.narrow(0, s.valid, s.rows - s.valid), Tensor::zeros({s.rows - s.valid, C})), 0.0);
    EXPECT_EQ(rel_diff(emb.weight.grad().narrow(0, s.valid, s.rows - s.valid), Tensor::zeros({s.rows - s.valid, C})),
              0.0);
  }
  w.stats().reset();
}

// The loss and the logits' gradient of the full (N, V) logits, from each rank's columns only: padding columns
// (filled with large garbage here) change nothing; ignored rows count for nothing; three all-reduces of N.
TEST(L13_T3_VocabParallelCrossEntropy, EqualsTheCrossEntropyOfTheFullLogits) {
  auto& w = dist::world();
  const int t = w.size(), r = w.rank();
  for (std::int64_t V : {std::int64_t{63}, std::int64_t{300}}) {
    const std::int64_t N = 10, Vp = tp::padded_vocab_size(V, t);
    const tp::VocabSlice s = tp::vocab_slice(V, Vp, r, t);
    Generator gen(31);
    Tensor full = leaf({N, V}, gen, 3.f);
    std::vector<std::int32_t> tg;
    for (std::int64_t i = 0; i < N; ++i) tg.push_back(static_cast<std::int32_t>(gen.next_below(static_cast<std::uint64_t>(V))));
    tg[2] = -1, tg[7] = -1;  // ignored
    tg[0] = 0, tg[1] = static_cast<std::int32_t>(V - 1);
    const Tensor targets = Tensor::from_ints(tg, {N});
    Tensor loss_ref = ag::cross_entropy(full, targets, -1);
    ag::backward(loss_ref);

    Tensor local_values = Tensor::full({N, s.rows}, 50.f);  // the padding: garbage the softmax must leave out
    if (s.valid > 0) {
      Tensor dst = local_values.narrow(1, 0, s.valid);
      dst.copy_(full.detach().narrow(1, s.start, s.valid));
    }
    Tensor local = local_values.set_requires_grad();
    w.stats().reset();
    Tensor loss = tp::vocab_parallel_cross_entropy(local, targets, s, V, w, -1);
    EXPECT_EQ(w.stats().calls, 3) << "the max, the sum of exps, the target's logit";
    EXPECT_EQ(w.stats().elements, 3 * dist::all_reduce_volume(N, t, r));
    EXPECT_LT(std::fabs(loss.item() - loss_ref.item()), 1e-6 * std::fabs(loss_ref.item())) << "V " << V;
    ag::backward(loss);
    EXPECT_EQ(w.stats().calls, 3) << "backward sends nothing";
    if (s.valid > 0) {
      EXPECT_LT(rel_diff(local.grad().narrow(1, 0, s.valid), full.grad().narrow(1, s.start, s.valid)), 1e-6) << "V " << V;
    }
    if (s.valid < s.rows) {
      EXPECT_EQ(rel_diff(local.grad().narrow(1, s.valid, s.rows - s.valid), Tensor::zeros({N, s.rows - s.valid})), 0.0);
    }
    w.stats().reset();
  }
}

// Its backward against finite differences, on a tensor group of one rank (each rank alone): the formula itself.
TEST(L13_T3_VocabParallelCrossEntropy, BackwardMatchesFiniteDifferences) {
  auto& w = dist::world();
  auto alone = w.split(w.rank(), 0);
  const std::int64_t V = 7;
  const tp::VocabSlice s = tp::vocab_slice(V, V, 0, 1);
  Generator gen(41);
  const Tensor targets = Tensor::from_ints({3, -1, 0, 6}, {4});
  auto fn = [&](const std::vector<Tensor>& in) { return tp::vocab_parallel_cross_entropy(in[0], targets, s, V, *alone, -1); };
  EXPECT_GRADCHECK(fn, {rand_leaf({4, V}, gen, -2.f, 2.f)});
}

TEST(L13_T3_VocabParallelCrossEntropy, ATargetOutOfRangeIsOneClearError) {
  auto& w = dist::world();
  const std::int64_t V = 300, Vp = tp::padded_vocab_size(V, w.size());
  const tp::VocabSlice s = tp::vocab_slice(V, Vp, w.rank(), w.size());
  Tensor logits = Tensor::zeros({2, s.rows}).set_requires_grad();
  const std::string e = error_of([&] {
    (void)tp::vocab_parallel_cross_entropy(logits, Tensor::from_ints({5, 300}, {2}), s, V, w, -1);
  });
  EXPECT_TRUE(contains(e, "target 300 at row 1 is out of range [0, 300)")) << e;
}
