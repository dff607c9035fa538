// L02 — finite-difference checks of the elementwise ops (with broadcasting both ways), the
// reductions, the view ops and the dtype cast. One suite per op family; every differentiable op of
// autograd/functions.h is checked here or in test_gradcheck_nn.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gradcheck_helpers.h"

using namespace minitorch;
using namespace mt_test;
namespace ag = minitorch::autograd;

// ---------------------------------------------------------------------------------------------
// The oracle itself: a wrong backward must be caught, a right one must pass.
// ---------------------------------------------------------------------------------------------

namespace {
/// y = x², with a backward that is right (2 g x) or wrong (g x).
struct SquareBackward : ag::Node {
  Tensor x;
  bool correct;
  explicit SquareBackward(bool c) : correct(c) {}
  const char* name() const override { return "SquareBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gx = ops::mul(g, x);
    return {correct ? ops::affine(gx, 2.f) : gx};
  }
};
Tensor square(const Tensor& x, bool correct) {
  auto node = std::make_shared<SquareBackward>(correct);
  node->x = x.detach();
  return ag::record(ops::mul(x, x), node, {x});
}
}  // namespace

TEST(L02_T3_Oracle, CatchesAWrongBackward) {
  Generator gen(1);
  Tensor x = rand_leaf({3, 2}, gen, 0.5f, 1.5f);
  auto bad = ag::gradcheck([](const Inputs& in) { return square(in[0], false); }, {x});
  EXPECT_FALSE(bad.ok);
  EXPECT_GT(bad.max_abs_error, 0.1);
  EXPECT_NE(bad.report.find("analytic"), std::string::npos) << bad.report;
  EXPECT_GRADCHECK([](const Inputs& in) { return square(in[0], true); }, {x});
}

// Central differences are exact on a quadratic (their error is eps² times the third derivative, 0 here);
// a one-sided difference is off by eps/2 times the second derivative, far above the tolerance.
TEST(L02_T3_Oracle, CentralDifferencesAreExactOnAQuadratic) {
  Generator gen(3);
  Tensor x = rand_leaf({4, 3}, gen, 0.5f, 1.5f);
  ag::GradcheckOptions tight;
  tight.atol = 2e-4;
  tight.rtol = 0;
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::mul(in[0], in[0]); }, {x}, tight);
}

TEST(L02_T3_Oracle, ReportsAnInputTheGradientNeverReached) {
  Generator gen(2);
  Tensor x = rand_leaf({2}, gen), y = rand_leaf({2}, gen);
  auto r = ag::gradcheck([](const Inputs& in) { return ag::exp(in[0]); }, {x, y});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("no gradient"), std::string::npos) << r.report;
}

TEST(L02_GradcheckOracle, RejectsNonF32OrNonContiguousInputs) {
  Tensor h = Tensor::ones({2}, DType::bf16);
  h.set_requires_grad();
  EXPECT_THROW(ag::gradcheck([](const Inputs& in) { return ag::exp(in[0]); }, {h}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Binary elementwise ops, broadcasting both ways
// ---------------------------------------------------------------------------------------------

namespace {
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
struct BinaryCase {
  const char* name;
  BinaryFn fn;
};
const BinaryCase kBinary[] = {{"add", ag::add}, {"sub", ag::sub}, {"mul", ag::mul}, {"div", ag::div}};

/// Shape pairs: equal, b broadcast into a, a broadcast into b, both broadcast, scalar operands.
const std::vector<std::pair<Shape, Shape>> kShapes = {
    {{2, 3}, {2, 3}},  {{2, 3, 4}, {4}},  {{4}, {2, 3, 4}},  {{2, 1, 4}, {3, 1}},
    {{3, 1}, {1, 4}},  {{2, 3}, {}},      {{}, {2, 3}},      {{2, 3, 4}, {2, 1, 4}},
};

void check_binary(const BinaryCase& op) {
  for (const auto& [sa, sb] : kShapes) {
    SCOPED_TRACE(std::string(op.name) + " " + shape_str(sa) + " with " + shape_str(sb));
    Generator gen(11);
    Tensor a = rand_leaf(sa, gen);
    // divisors stay away from 0 so the quotient is smooth over ±eps
    Tensor b = op.fn == static_cast<BinaryFn>(ag::div) ? away_from_zero_leaf(sb, gen) : rand_leaf(sb, gen);
    EXPECT_GRADCHECK([&op](const Inputs& in) { return op.fn(in[0], in[1]); }, {a, b});
    // only one side differentiable: the other gets no edge and the checked one is still right
    Tensor c = b.detach().clone();
    EXPECT_GRADCHECK([&op, c](const Inputs& in) { return op.fn(in[0], c); }, {a});
  }
}
}  // namespace

TEST(L02_GradcheckElementwise, Add) { check_binary(kBinary[0]); }
TEST(L02_GradcheckElementwise, Sub) { check_binary(kBinary[1]); }
TEST(L02_GradcheckElementwise, Mul) { check_binary(kBinary[2]); }
TEST(L02_GradcheckElementwise, Div) { check_binary(kBinary[3]); }

TEST(L02_GradcheckElementwise, BroadcastGradientHasTheInputShape) {
  Generator gen(3);
  Tensor a = rand_leaf({2, 3, 4}, gen), b = rand_leaf({3, 1}, gen);
  ag::backward(ag::sum(ag::mul(a, b)));
  EXPECT_EQ(a.grad().shape(), a.shape());
  EXPECT_EQ(b.grad().shape(), b.shape());
  // d/db[j] sum_{i,j,k} a[i,j,k] b[j] = sum_{i,k} a[i,j,k]
  std::vector<float> av = a.to_vector(), gb = b.grad().to_vector();
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) s += av[static_cast<std::size_t>(i * 12 + j * 4 + k)];
    EXPECT_NEAR(gb[static_cast<std::size_t>(j)], s, 1e-5);
  }
}

TEST(L02_GradcheckElementwise, InputsMayBeNonContiguousViews) {
  Generator gen(4);
  Tensor a = rand_leaf({3, 4}, gen), b = rand_leaf({4, 3}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::mul(ag::transpose(in[0], 0, 1), in[1]); }, {a, b});
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::add(ag::narrow(in[0], 1, 1, 3), ag::narrow(in[1], 0, 0, 3)); },
                   {a, b});
}

// ---------------------------------------------------------------------------------------------
// Unary elementwise ops
// ---------------------------------------------------------------------------------------------

TEST(L02_GradcheckUnary, Affine) {
  Generator gen(5);
  Tensor x = rand_leaf({3, 4}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::affine(in[0], 2.5f, -1.f); }, {x});
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::affine(in[0], -0.5f); }, {x});
}

TEST(L02_GradcheckUnary, Neg) {
  Generator gen(6);
  Tensor x = rand_leaf({2, 5}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::neg(in[0]); }, {x});
}

TEST(L02_GradcheckUnary, Exp) {
  Generator gen(7);
  Tensor x = rand_leaf({2, 5}, gen, -2.f, 2.f);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::exp(in[0]); }, {x});
}

TEST(L02_GradcheckUnary, LogOfPositiveInputs) {
  Generator gen(8);
  Tensor x = rand_leaf({2, 5}, gen, 0.5f, 3.f);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::log(in[0]); }, {x});
}

TEST(L02_T2_Gradcheck, Tanh) {
  Generator gen(9);
  Tensor x = rand_leaf({3, 4}, gen, -2.f, 2.f);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::tanh(in[0]); }, {x});
}

TEST(L02_GradcheckUnary, Pow) {
  Generator gen(10);
  Tensor x = rand_leaf({2, 4}, gen, -1.5f, 1.5f);
  for (float p : {2.f, 3.f, 1.f})
    EXPECT_GRADCHECK([p](const Inputs& in) { return ag::pow(in[0], p); }, {x}) << "p = " << p;
  Tensor pos = rand_leaf({2, 4}, gen, 0.5f, 2.f);
  for (float p : {0.5f, -1.5f, 2.5f})
    EXPECT_GRADCHECK([p](const Inputs& in) { return ag::pow(in[0], p); }, {pos}) << "p = " << p;
}

// ---------------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------------

namespace {
struct ReduceCase {
  std::vector<std::int64_t> dims;
  bool keepdim;
};
const ReduceCase kReduce[] = {{{}, false}, {{}, true},     {{1}, false},     {{1}, true},
                              {{0, 2}, false}, {{0, 2}, true}, {{-1}, false}, {{-1, -3}, true}};
}  // namespace

TEST(L02_GradcheckReduce, Sum) {
  Generator gen(12);
  Tensor x = rand_leaf({2, 3, 4}, gen);
  for (const auto& c : kReduce) {
    SCOPED_TRACE("dims " + shape_str(c.dims) + (c.keepdim ? " keepdim" : ""));
    EXPECT_GRADCHECK([c](const Inputs& in) { return ag::sum(in[0], c.dims, c.keepdim); }, {x});
  }
}

TEST(L02_GradcheckReduce, Mean) {
  Generator gen(13);
  Tensor x = rand_leaf({2, 3, 4}, gen);
  for (const auto& c : kReduce) {
    SCOPED_TRACE("dims " + shape_str(c.dims) + (c.keepdim ? " keepdim" : ""));
    EXPECT_GRADCHECK([c](const Inputs& in) { return ag::mean(in[0], c.dims, c.keepdim); }, {x});
  }
}

TEST(L02_GradcheckReduce, MeanGradientIsOneOverCount) {
  Tensor x = Tensor::ones({2, 3, 4});
  x.set_requires_grad();
  ag::backward(ag::sum(ag::mean(x, {0, 2})));  // each of the 3 means averages 8 elements
  for (float g : x.grad().to_vector()) EXPECT_FLOAT_EQ(g, 1.f / 8);
}

TEST(L02_GradcheckReduce, OfANonContiguousView) {
  Generator gen(14);
  Tensor x = rand_leaf({3, 4}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::sum(ag::transpose(in[0], 0, 1), {1}); }, {x});
}

// ---------------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------------

TEST(L02_GradcheckView, Reshape) {
  Generator gen(15);
  Tensor x = rand_leaf({2, 3, 4}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::reshape(in[0], {4, 6}); }, {x});
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::reshape(in[0], {-1}); }, {x});
  // reshape of a non-contiguous view (copies) followed by a weighting so positions matter
  Tensor w = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {6});
  EXPECT_GRADCHECK([w](const Inputs& in) { return ag::mul(ag::reshape(ag::transpose(in[0], 0, 2), {-1, 6}), w); },
                   {x});
}

TEST(L02_GradcheckView, ReshapeSharesStorageForward) {
  Tensor x = Tensor::ones({2, 3});
  x.set_requires_grad();
  Tensor r = ag::reshape(x, {3, 2});
  EXPECT_EQ(r.storage(), x.storage());
  EXPECT_TRUE(r.requires_grad());
  Tensor t = ag::transpose(x, 0, 1);
  EXPECT_EQ(t.storage(), x.storage());
  EXPECT_FALSE(t.is_leaf());
  EXPECT_TRUE(x.is_leaf());  // recording the view must not touch the leaf itself
  EXPECT_EQ(x.grad_fn(), nullptr);
}

TEST(L02_GradcheckView, Transpose) {
  Generator gen(16);
  Tensor x = rand_leaf({2, 3, 4}, gen);
  Tensor w = Tensor::uniform({4, 3, 2}, gen);
  EXPECT_GRADCHECK([w](const Inputs& in) { return ag::mul(ag::transpose(in[0], 0, 2), w); }, {x});
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::transpose(in[0], -1, -2); }, {x});
}

TEST(L02_GradcheckView, Permute) {
  Generator gen(17);
  Tensor x = rand_leaf({2, 3, 4}, gen);
  Tensor w = Tensor::uniform({4, 2, 3}, gen);
  EXPECT_GRADCHECK([w](const Inputs& in) { return ag::mul(ag::permute(in[0], {2, 0, 1}), w); }, {x});
  EXPECT_GRADCHECK([w](const Inputs& in) { return ag::mul(ag::permute(in[0], {-1, 0, 1}), w); }, {x});
  Tensor w2 = Tensor::uniform({3, 4, 2}, gen);
  EXPECT_GRADCHECK([w2](const Inputs& in) { return ag::mul(ag::permute(in[0], {1, 2, 0}), w2); }, {x});
}

TEST(L02_GradcheckView, Narrow) {
  Generator gen(18);
  Tensor x = rand_leaf({3, 5}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::narrow(in[0], 1, 1, 3); }, {x});
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::narrow(in[0], 0, 2, 1); }, {x});
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::narrow(in[0], -1, 0, 2); }, {x});
  // two overlapping slices of one tensor: gradients add where they overlap
  EXPECT_GRADCHECK(
      [](const Inputs& in) { return ag::mul(ag::narrow(in[0], 1, 0, 3), ag::narrow(in[0], 1, 2, 3)); }, {x});
}

TEST(L02_GradcheckView, NarrowGradientIsZeroOutsideTheSlice) {
  Tensor x = Tensor::ones({4});
  x.set_requires_grad();
  ag::backward(ag::sum(ag::narrow(x, 0, 1, 2)));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0, 1, 1, 0}));
}

TEST(L02_GradcheckView, Contiguous) {
  Generator gen(19);
  Tensor x = rand_leaf({3, 4}, gen);
  Tensor w = Tensor::uniform({4, 3}, gen);
  EXPECT_GRADCHECK([w](const Inputs& in) { return ag::mul(ag::contiguous(ag::transpose(in[0], 0, 1)), w); }, {x});
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::contiguous(in[0]); }, {x});  // already contiguous: itself
  Tensor c = ag::contiguous(x);
  EXPECT_TRUE(c.same(x));
}

TEST(L02_GradcheckView, ChainOfViews) {
  Generator gen(20);
  Tensor x = rand_leaf({2, 3, 4}, gen);
  Tensor w = Tensor::uniform({3, 2, 2}, gen);
  EXPECT_GRADCHECK(
      [w](const Inputs& in) {
        Tensor v = ag::narrow(ag::permute(in[0], {1, 2, 0}), 1, 1, 2);  // (3, 2, 2) non-contiguous
        return ag::mul(ag::reshape(ag::contiguous(v), {3, 2, 2}), w);
      },
      {x});
}

// ---------------------------------------------------------------------------------------------
// dtype cast
// ---------------------------------------------------------------------------------------------

namespace {
/// Multiples of 1/64 in [-1.5, 1.5]: exact in bf16, as are x ± 1/64, so the cast has slope exactly 1.
Tensor bf16_exact_leaf(const Shape& shape, Generator& gen) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (auto& x : v) x = static_cast<float>(static_cast<int>(gen.next_below(193)) - 96) / 64.f;
  Tensor t = Tensor::from_vector(v, shape);
  t.set_requires_grad();
  return t;
}
}  // namespace

TEST(L02_GradcheckDType, ToDtype) {
  Generator gen(21);
  Tensor x = bf16_exact_leaf({3, 4}, gen);
  ag::GradcheckOptions opt;
  opt.eps = 1.0 / 64;
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::to_dtype(in[0], DType::bf16); }, {x}, opt);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::to_dtype(ag::to_dtype(in[0], DType::bf16), DType::f32); }, {x},
                   opt);
  Tensor same = ag::to_dtype(x, DType::f32);
  EXPECT_TRUE(same.same(x));
  Tensor h = ag::to_dtype(x, DType::bf16);
  EXPECT_EQ(h.dtype(), DType::bf16);
  EXPECT_TRUE(h.requires_grad());
}

TEST(L02_GradcheckDType, Bf16LeafGetsABf16Gradient) {
  // Mixed precision: a bf16 parameter cast up to f32 for compute gets its gradient cast back.
  Tensor w = Tensor::from_vector({1.f, 2.f, 3.f}, {3}, DType::bf16);
  w.set_requires_grad();
  Tensor c = Tensor::from_vector({1.f / 3, 1.f, 1.f + 1.f / 512}, {3});
  ag::backward(ag::sum(ag::mul(ag::to_dtype(w, DType::f32), c)));
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), DType::bf16);
  EXPECT_EQ(w.grad().to_vector(), (std::vector<float>{bf16_to_f32(f32_to_bf16(1.f / 3)), 1.f, 1.f}));
}
