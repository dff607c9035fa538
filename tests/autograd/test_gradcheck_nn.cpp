// L02 — finite-difference checks of matmul (all transpose combinations, batched, batched with a
// shared 2-D b), linear, softmax, causal softmax, layernorm, gelu, embedding, cross-entropy, and
// composites (a 2-layer MLP, an attention head).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gradcheck_helpers.h"

using namespace minitorch;
using namespace mt_test;
namespace ag = minitorch::autograd;

namespace {
/// Shape of a (M, K) matrix operand, transposed if `t`, with leading batch dims.
Shape mat_shape(const Shape& batch, std::int64_t rows, std::int64_t cols, bool t) {
  Shape s = batch;
  s.push_back(t ? cols : rows);
  s.push_back(t ? rows : cols);
  return s;
}

/// out = op(a) @ op(b) for a: batch_a + (M, K), b: batch_b + (K, N), every transpose combination.
void check_matmul(const Shape& batch_a, const Shape& batch_b) {
  const std::int64_t M = 3, K = 4, N = 2;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("trans_a=") + (ta ? "1" : "0") + " trans_b=" + (tb ? "1" : "0") + " batch_a " +
                   shape_str(batch_a) + " batch_b " + shape_str(batch_b));
      Generator gen(100 + 2 * ta + tb);
      Tensor a = rand_leaf(mat_shape(batch_a, M, K, ta), gen);
      Tensor b = rand_leaf(mat_shape(batch_b, K, N, tb), gen);
      EXPECT_GRADCHECK([ta, tb](const Inputs& in) { return ag::matmul(in[0], in[1], ta, tb); }, {a, b});
      // each side alone (the other a constant)
      Tensor bc = b.detach().clone(), ac = a.detach().clone();
      EXPECT_GRADCHECK([ta, tb, bc](const Inputs& in) { return ag::matmul(in[0], bc, ta, tb); }, {a});
      EXPECT_GRADCHECK([ta, tb, ac](const Inputs& in) { return ag::matmul(ac, in[0], ta, tb); }, {b});
    }
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Matmul
// ---------------------------------------------------------------------------------------------

TEST(L02_GradcheckMatmul, TwoDAllTransposes) { check_matmul({}, {}); }
TEST(L02_GradcheckMatmul, BatchedAllTransposes) { check_matmul({2}, {2}); }
TEST(L02_GradcheckMatmul, TwoBatchDimsAllTransposes) { check_matmul({2, 2}, {2, 2}); }
TEST(L02_GradcheckMatmul, BatchedWithSharedTwoDBAllTransposes) { check_matmul({2, 3}, {}); }

TEST(L02_GradcheckMatmul, SharedBGradientHasTwoDShape) {
  Generator gen(5);
  Tensor a = rand_leaf({2, 3, 4}, gen), b = rand_leaf({4, 5}, gen);
  ag::backward(ag::sum(ag::matmul(a, b)));
  EXPECT_EQ(b.grad().shape(), (Shape{4, 5}));
  EXPECT_EQ(a.grad().shape(), (Shape{2, 3, 4}));
}

TEST(L02_GradcheckMatmul, NonContiguousOperands) {
  Generator gen(6);
  Tensor a = rand_leaf({4, 3}, gen), b = rand_leaf({2, 4}, gen);
  EXPECT_GRADCHECK(
      [](const Inputs& in) { return ag::matmul(ag::transpose(in[0], 0, 1), ag::transpose(in[1], 0, 1)); }, {a, b});
}

// ---------------------------------------------------------------------------------------------
// Linear
// ---------------------------------------------------------------------------------------------

TEST(L02_T2_GradcheckLinear, WithBias3DInput) {
  Generator gen(30);
  Tensor x = rand_leaf({2, 3, 4}, gen), w = rand_leaf({5, 4}, gen), b = rand_leaf({5}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::linear(in[0], in[1], in[2]); }, {x, w, b});
}

TEST(L02_T2_GradcheckLinear, WithoutBias3DInput) {
  Generator gen(31);
  Tensor x = rand_leaf({2, 3, 4}, gen), w = rand_leaf({5, 4}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::linear(in[0], in[1], Tensor()); }, {x, w});
}

TEST(L02_T2_GradcheckLinear, TwoDInputAndPartialGrads) {
  Generator gen(32);
  Tensor x = rand_leaf({3, 4}, gen), w = rand_leaf({2, 4}, gen), b = rand_leaf({2}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::linear(in[0], in[1], in[2]); }, {x, w, b});
  Tensor xc = x.detach().clone();  // a data batch: no gradient for x
  EXPECT_GRADCHECK([xc](const Inputs& in) { return ag::linear(xc, in[0], in[1]); }, {w, b});
  Tensor wc = w.detach().clone(), bc = b.detach().clone();  // frozen layer: gradient only for x
  EXPECT_GRADCHECK([wc, bc](const Inputs& in) { return ag::linear(in[0], wc, bc); }, {x});
}

TEST(L02_T2_GradcheckLinear, NonContiguousInput) {
  Generator gen(33);
  Tensor x = rand_leaf({4, 2, 3}, gen), w = rand_leaf({5, 4}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::linear(ag::permute(in[0], {1, 2, 0}), in[1], Tensor()); },
                   {x, w});
}

TEST(L02_GradcheckLinear, ForwardIsXWTransposedPlusB) {
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  Tensor w = Tensor::from_vector({1, 0, -1, 2, 1, 0}, {2, 3});
  Tensor b = Tensor::from_vector({10, 20}, {2});
  Tensor y = ag::linear(x, w, b);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1 - 3 + 10, 2 + 2 + 20, 4 - 6 + 10, 8 + 5 + 20}));
  EXPECT_THROW(ag::linear(x, Tensor::ones({2, 4}), b), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Softmax
// ---------------------------------------------------------------------------------------------

TEST(L02_GradcheckSoftmax, Rows) {
  Generator gen(40);
  Tensor x = rand_leaf({3, 5}, gen, -2.f, 2.f);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::softmax(in[0]); }, {x});
  Tensor x3 = rand_leaf({2, 3, 4}, gen, -2.f, 2.f);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::softmax(in[0]); }, {x3});
}

TEST(L02_GradcheckSoftmax, OfANonContiguousView) {
  Generator gen(41);
  Tensor x = rand_leaf({5, 3}, gen, -2.f, 2.f);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::softmax(ag::transpose(in[0], 0, 1)); }, {x});
}

TEST(L02_GradcheckSoftmax, CausalWithScale) {
  Generator gen(42);
  Tensor x = rand_leaf({2, 4, 4}, gen, -2.f, 2.f);
  for (float scale : {1.f, 0.5f, 1.f / std::sqrt(8.f)})
    EXPECT_GRADCHECK([scale](const Inputs& in) { return ag::causal_softmax(in[0], scale); }, {x})
        << "scale " << scale;
  Tensor x4 = rand_leaf({2, 2, 3, 3}, gen, -2.f, 2.f);  // (B, H, T, T)
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::causal_softmax(in[0], 0.7f); }, {x4});
}

TEST(L02_GradcheckSoftmax, CausalGradientIsZeroAboveTheDiagonal) {
  Generator gen(43);
  Tensor x = rand_leaf({3, 3}, gen);
  Tensor r = Tensor::randn({3, 3}, gen);
  ag::backward(ag::sum(ag::mul(ag::causal_softmax(x, 0.5f), r)));
  EXPECT_EQ(x.grad().at({0, 1}), 0.f);
  EXPECT_EQ(x.grad().at({0, 2}), 0.f);
  EXPECT_EQ(x.grad().at({1, 2}), 0.f);
  EXPECT_EQ(x.grad().at({0, 0}), 0.f);  // a one-element row: softmax is 1, flat
}

// ---------------------------------------------------------------------------------------------
// LayerNorm
// ---------------------------------------------------------------------------------------------

TEST(L02_GradcheckLayerNorm, AllThreeInputs) {
  Generator gen(50);
  Tensor x = randn_leaf({3, 6}, gen), w = rand_leaf({6}, gen, 0.5f, 1.5f), b = rand_leaf({6}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::layernorm(in[0], in[1], in[2]); }, {x, w, b});
}

TEST(L02_GradcheckLayerNorm, ThreeDInput) {
  Generator gen(51);
  Tensor x = randn_leaf({2, 3, 5}, gen), w = rand_leaf({5}, gen, 0.5f, 1.5f), b = rand_leaf({5}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::layernorm(in[0], in[1], in[2]); }, {x, w, b});
}

TEST(L02_GradcheckLayerNorm, OnlySomeInputsNeedGrad) {
  Generator gen(52);
  Tensor x = randn_leaf({3, 4}, gen), w = rand_leaf({4}, gen, 0.5f, 1.5f), b = rand_leaf({4}, gen);
  Tensor wc = w.detach().clone(), bc = b.detach().clone(), xc = x.detach().clone();
  EXPECT_GRADCHECK([wc, bc](const Inputs& in) { return ag::layernorm(in[0], wc, bc); }, {x});
  EXPECT_GRADCHECK([xc](const Inputs& in) { return ag::layernorm(xc, in[0], in[1]); }, {w, b});
}

// ---------------------------------------------------------------------------------------------
// GELU
// ---------------------------------------------------------------------------------------------

TEST(L02_GradcheckGelu, OverItsRange) {
  Generator gen(60);
  Tensor x = rand_leaf({4, 5}, gen, -3.f, 3.f);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::gelu(in[0]); }, {x});
  Tensor x3 = rand_leaf({2, 2, 3}, gen, -3.f, 3.f);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::gelu(ag::transpose(in[0], 0, 2)); }, {x3});
}

// ---------------------------------------------------------------------------------------------
// Embedding
// ---------------------------------------------------------------------------------------------

TEST(L02_GradcheckEmbedding, WeightWithRepeatedIds) {
  Generator gen(70);
  Tensor w = rand_leaf({6, 3}, gen);
  Tensor idx = Tensor::from_ints({1, 4, 1, 1, 0, 4}, {2, 3});
  EXPECT_GRADCHECK([idx](const Inputs& in) { return ag::embedding(in[0], idx); }, {w});
}

TEST(L02_GradcheckEmbedding, RepeatedIdsSumTheirRows) {
  Tensor w = Tensor::zeros({4, 2});
  w.set_requires_grad();
  Tensor idx = Tensor::from_ints({2, 0, 2, 2}, {4});
  Tensor dy = Tensor::from_vector({1, 2, 10, 20, 100, 200, 1000, 2000}, {4, 2});
  ag::backward(ag::embedding(w, idx), dy);
  EXPECT_EQ(w.grad().to_vector(), (std::vector<float>{10, 20, 0, 0, 1101, 2202, 0, 0}));
}

// ---------------------------------------------------------------------------------------------
// Cross-entropy
// ---------------------------------------------------------------------------------------------

TEST(L02_GradcheckCrossEntropy, AllTargetsCount) {
  Generator gen(80);
  Tensor logits = randn_leaf({4, 5}, gen);
  Tensor targets = Tensor::from_ints({0, 4, 2, 2}, {4});
  EXPECT_GRADCHECK([targets](const Inputs& in) { return ag::cross_entropy(in[0], targets); }, {logits});
}

TEST(L02_GradcheckCrossEntropy, WithIgnoredTargets) {
  Generator gen(81);
  Tensor logits = randn_leaf({5, 6}, gen);
  Tensor targets = Tensor::from_ints({2, -1, 0, 5, -1}, {5});
  EXPECT_GRADCHECK([targets](const Inputs& in) { return ag::cross_entropy(in[0], targets); }, {logits});
  Tensor t3 = Tensor::from_ints({3, 1, 3, 0, 2}, {5});  // a custom ignore_index
  EXPECT_GRADCHECK([t3](const Inputs& in) { return ag::cross_entropy(in[0], t3, 3); }, {logits});
}

TEST(L02_GradcheckCrossEntropy, IgnoredRowsGetZeroGradientAndMeanIsOverCounted) {
  Tensor logits = Tensor::zeros({3, 4});
  logits.set_requires_grad();
  Tensor targets = Tensor::from_ints({1, -1, 3}, {3});
  Tensor loss = ag::cross_entropy(logits, targets);
  EXPECT_NEAR(loss.item(), std::log(4.f), 1e-6);  // uniform logits: log V, averaged over 2 rows
  ag::backward(loss);
  auto g = logits.grad().to_vector();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(g[static_cast<std::size_t>(4 + j)], 0.f);
  // row 0: (softmax - onehot) / count = (0.25 - [j == 1]) / 2
  EXPECT_NEAR(g[0], 0.125f, 1e-6);
  EXPECT_NEAR(g[1], -0.375f, 1e-6);
}

// ---------------------------------------------------------------------------------------------
// Composites
// ---------------------------------------------------------------------------------------------

TEST(L02_GradcheckComposite, TwoLayerMLP) {
  Generator gen(90);
  Tensor x = rand_leaf({4, 6}, gen);
  Tensor w1 = rand_leaf({8, 6}, gen, -0.5f, 0.5f), b1 = rand_leaf({8}, gen, -0.1f, 0.1f);
  Tensor w2 = rand_leaf({3, 8}, gen, -0.5f, 0.5f), b2 = rand_leaf({3}, gen, -0.1f, 0.1f);
  Tensor targets = Tensor::from_ints({0, 2, 1, 2}, {4});
  EXPECT_GRADCHECK(
      [targets](const Inputs& in) {
        Tensor h = ag::gelu(ag::linear(in[0], in[1], in[2]));
        return ag::cross_entropy(ag::linear(h, in[3], in[4]), targets);
      },
      {x, w1, b1, w2, b2});
}

TEST(L02_GradcheckComposite, PreNormResidualBlock) {
  Generator gen(91);
  const std::int64_t C = 4;
  Tensor x = randn_leaf({2, 3, C}, gen);
  Tensor g = rand_leaf({C}, gen, 0.5f, 1.5f), bt = rand_leaf({C}, gen, -0.2f, 0.2f);
  Tensor w = rand_leaf({C, C}, gen, -0.5f, 0.5f);
  EXPECT_GRADCHECK(
      [](const Inputs& in) {
        Tensor h = ag::linear(ag::layernorm(in[0], in[1], in[2]), in[3], Tensor());
        return ag::add(in[0], ag::tanh(h));  // x + f(LN(x)): x reaches the output two ways
      },
      {x, g, bt, w});
}

TEST(L02_GradcheckComposite, CausalAttentionHead) {
  Generator gen(92);
  const std::int64_t B = 2, T = 3, D = 4;
  Tensor q = rand_leaf({B, T, D}, gen), k = rand_leaf({B, T, D}, gen), v = rand_leaf({B, T, D}, gen);
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  EXPECT_GRADCHECK(
      [scale](const Inputs& in) {
        Tensor att = ag::causal_softmax(ag::matmul(in[0], in[1], false, true), scale);  // (B, T, T)
        return ag::matmul(att, in[2]);                                                  // (B, T, D)
      },
      {q, k, v});
}

TEST(L02_GradcheckComposite, TiedEmbeddingAndHead) {
  Generator gen(93);
  Tensor wte = rand_leaf({5, 3}, gen);
  Tensor idx = Tensor::from_ints({1, 3, 1}, {3});
  Tensor targets = Tensor::from_ints({3, 0, 4}, {3});
  EXPECT_GRADCHECK(
      [idx, targets](const Inputs& in) {
        Tensor h = ag::tanh(ag::embedding(in[0], idx));
        return ag::cross_entropy(ag::linear(h, in[0], Tensor()), targets);
      },
      {wte});
}
