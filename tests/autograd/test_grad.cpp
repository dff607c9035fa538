// L02 — autograd::grad: gradients returned instead of accumulated. Checked against finite
// differences and against backward(); it leaves every .grad alone, fires no hook, reads gradients
// of intermediate tensors, and runs inside a running backward (activation checkpointing's case).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "gradcheck_helpers.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"

using namespace minitorch;
using namespace mt_test;
namespace ag = minitorch::autograd;

namespace {
ag::GradcheckOptions via_grad() {
  ag::GradcheckOptions opt;
  opt.via_grad = true;
  return opt;
}

/// A two-layer perceptron with a LayerNorm and a cross-entropy: most of the ops a GPT uses.
Tensor mlp_loss(const Inputs& in) {
  // in: x (4, 6), w1 (8, 6), b1 (8), g (8), w2 (3, 8)
  Tensor h = ag::gelu(ag::linear(in[0], in[1], in[2]));                       // (4, 8)
  h = ag::layernorm(h, in[3], Tensor::zeros({8}));                            // (4, 8)
  Tensor logits = ag::linear(h, in[4], Tensor());                             // (4, 3)
  return ag::cross_entropy(logits, Tensor::from_ints({0, 2, 1, 2}, {4}));     // scalar
}

Inputs mlp_inputs(Generator& gen) {
  return {rand_leaf({4, 6}, gen), rand_leaf({8, 6}, gen), rand_leaf({8}, gen), rand_leaf({8}, gen, 0.5f, 1.5f),
          rand_leaf({3, 8}, gen)};
}
}  // namespace

TEST(L02_AutogradGrad, GradcheckElementwiseAndReductions) {
  Generator gen(21);
  Tensor a = away_from_zero_leaf({3, 4}, gen, 0.5f, 1.5f, /*positive=*/true), b = rand_leaf({4}, gen);
  EXPECT_GRADCHECK([](const Inputs& in) { return ag::mean(ag::div(ag::log(in[0]), ag::exp(in[1])), {0}); }, {a, b},
                   via_grad());
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
}

TEST(L02_AutogradGrad, GradcheckMatmulAndViews) {
  Generator gen(22);
  Tensor a = rand_leaf({2, 3, 4}, gen), b = rand_leaf({5, 4}, gen);
  EXPECT_GRADCHECK(
      [](const Inputs& in) { return ag::tanh(ag::transpose(ag::matmul(in[0], in[1], false, true), 1, 2)); }, {a, b},
      via_grad());
}

TEST(L02_AutogradGrad, GradcheckLinearLayerNormCrossEntropy) {
  Generator gen(23);
  Inputs in = mlp_inputs(gen);
  EXPECT_GRADCHECK(mlp_loss, in, via_grad());
  for (const Tensor& t : in) EXPECT_FALSE(t.grad().defined());
}

TEST(L02_AutogradGrad, MatchesBackwardBitForBit) {
  Generator gen(24);
  Inputs in = mlp_inputs(gen);
  std::vector<Tensor> g = ag::grad({mlp_loss(in)}, in);
  ag::backward(mlp_loss(in));
  ASSERT_EQ(g.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(g[i].defined()) << i;
    EXPECT_EQ(g[i].shape(), in[i].shape());
    EXPECT_EQ(g[i].to_vector(), in[i].grad().to_vector()) << "input " << i;
  }
}

TEST(L02_AutogradGrad, IntermediateInputsGetTheGradientArrivingAtThem) {
  // loss = f(h), h = tanh(x w^T): d loss / dh equals backward of f at a leaf copy of h.
  Generator gen(25);
  Tensor x = rand_leaf({3, 4}, gen), w = rand_leaf({5, 4}, gen), r = Tensor::randn({3, 5}, gen);
  auto f = [&](const Tensor& h) { return ag::sum(ag::mul(ag::mul(h, h), r)); };
  Tensor h = ag::tanh(ag::linear(x, w, Tensor()));
  auto g = ag::grad({f(h)}, {h, w});
  Tensor h_leaf = h.detach().set_requires_grad();
  ag::backward(f(h_leaf));
  EXPECT_EQ(g[0].to_vector(), h_leaf.grad().to_vector());
  ag::backward(f(ag::tanh(ag::linear(x, w, Tensor()))));
  EXPECT_EQ(g[1].to_vector(), w.grad().to_vector());
  // the output itself as an input: d out / d out = grad_output
  Tensor y = ag::exp(x);
  Tensor go = Tensor::randn({3, 4}, gen);
  EXPECT_EQ(ag::grad({y}, {y}, {go})[0].to_vector(), go.to_vector());
}

TEST(L02_AutogradGrad, LeavesGradUntouchedAndFiresNoHooks) {
  Generator gen(26);
  Inputs in = mlp_inputs(gen);
  int calls = 0;
  std::vector<HookHandle> hooks;
  for (Tensor& t : in) hooks.push_back(t.register_grad_hook([&](Tensor&) { ++calls; }));
  ag::grad({mlp_loss(in)}, in);
  for (const Tensor& t : in) EXPECT_FALSE(t.grad().defined());
  EXPECT_EQ(calls, 0);
  // and a gradient accumulated earlier stays exactly what it was
  ag::backward(mlp_loss(in));
  EXPECT_EQ(calls, 5);
  std::vector<float> before = in[1].grad().to_vector();
  ag::grad({mlp_loss(in)}, {in[1]});
  EXPECT_EQ(in[1].grad().to_vector(), before);
  EXPECT_EQ(calls, 5);
}

TEST(L02_AutogradGrad, InputsNotReachedGetAnUndefinedTensor) {
  Tensor a = Tensor::from_vector({1, 2}, {2}).set_requires_grad();
  Tensor unused = Tensor::from_vector({3}, {1}).set_requires_grad();
  Tensor side = ag::exp(a);  // in the graph of `a`, not of the output
  auto g = ag::grad({ag::sum(ag::mul(a, a))}, {unused, a, side});
  EXPECT_FALSE(g[0].defined());
  EXPECT_EQ(g[1].to_vector(), (std::vector<float>{2, 4}));
  EXPECT_FALSE(g[2].defined());
}

TEST(L02_AutogradGrad, SeveralOutputsWithTheirGradients) {
  // d(y1·g1 + y2·g2)/dw = 2w g1 + e^w g2
  Tensor w = Tensor::from_vector({0.5f, -1.f}, {2}).set_requires_grad();
  Tensor g1 = Tensor::from_vector({1, 2}, {2}), g2 = Tensor::from_vector({3, 4}, {2});
  auto g = ag::grad({ag::mul(w, w), ag::exp(w)}, {w}, {g1, g2});
  std::vector<float> got = g[0].to_vector();
  EXPECT_FLOAT_EQ(got[0], 2 * 0.5f * 1 + std::exp(0.5f) * 3);
  EXPECT_FLOAT_EQ(got[1], 2 * -1.f * 2 + std::exp(-1.f) * 4);
  EXPECT_EQ(g1.to_vector(), (std::vector<float>{1, 2}));  // the caller's gradients are untouched
}

TEST(L02_AutogradGrad, RetainGraphKeepsItForALaterBackward) {
  Tensor w = Tensor::from_vector({1, 2}, {2}).set_requires_grad();
  Tensor loss = ag::sum(ag::mul(ag::exp(w), w));
  auto g1 = ag::grad({loss}, {w}, {}, /*retain_graph=*/true);
  auto g2 = ag::grad({loss}, {w}, {}, /*retain_graph=*/true);
  EXPECT_EQ(g1[0].to_vector(), g2[0].to_vector());
  ag::backward(loss);
  EXPECT_EQ(w.grad().to_vector(), g1[0].to_vector());

  Tensor loss2 = ag::sum(ag::mul(ag::exp(w), w));
  ag::grad({loss2}, {w});  // frees the graph, as backward does
  EXPECT_THROW(ag::backward(loss2), std::runtime_error);
}

TEST(L02_AutogradGrad, BadArgumentsAreClearErrors) {
  Tensor w = Tensor::from_vector({1, 2}, {2}).set_requires_grad();
  Tensor plain = Tensor::ones({2});
  EXPECT_THROW(ag::grad({ag::sum(w)}, {plain}), std::invalid_argument);         // input needs no grad
  EXPECT_THROW(ag::grad({ag::sum(plain)}, {w}), std::invalid_argument);         // output has no graph
  EXPECT_THROW(ag::grad({ag::exp(w)}, {w}), std::invalid_argument);             // implicit grad of 2 elements
  EXPECT_THROW(ag::grad({ag::exp(w)}, {w}, {Tensor::ones({3})}), std::invalid_argument);  // wrong shape
  EXPECT_THROW(ag::grad({ag::exp(w)}, {w}, {Tensor::ones({2}), Tensor::ones({2})}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Nested: grad inside a running backward
// ---------------------------------------------------------------------------------------------

namespace {
using Fn2 = std::function<Tensor(const Tensor&, const Tensor&)>;

/// y = f(x, w) run without a graph; backward runs f again with one and differentiates it with
/// autograd::grad, returning dx and dw to the outer backward: activation checkpointing in miniature.
struct RecomputeBackward : ag::Node {
  Tensor x, w;
  Fn2 f;
  const char* name() const override { return "RecomputeBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor xr = x.detach().set_requires_grad();
    Tensor y = f(xr, w);
    return ag::grad({y}, {xr, w}, {g});
  }
  void release_saved() override { x = w = Tensor(); }
};

Tensor recomputed(const Fn2& f, const Tensor& x, const Tensor& w) {
  Tensor y;
  {
    ag::NoGradGuard no_grad;
    y = f(x, w);
  }
  auto node = std::make_shared<RecomputeBackward>();
  node->x = x.detach();
  node->w = w;
  node->f = f;
  return ag::record(y, node, {x, w});
}
}  // namespace

TEST(L02_AutogradGrad, NestedInsideANodesBackward) {
  Fn2 block = [](const Tensor& x, const Tensor& w) { return ag::gelu(ag::linear(ag::tanh(x), w, Tensor())); };
  auto run = [&](bool recompute, Tensor& x0, Tensor& w0, Tensor& w, int& w_hook_calls) {
    HookHandle h = w.register_grad_hook([&](Tensor&) { ++w_hook_calls; });
    Tensor x = ag::mul(x0, w0);                                  // (3, 4): x is not a leaf
    Tensor y = recompute ? recomputed(block, x, w) : block(x, w);  // (3, 5)
    ag::backward(ag::sum(ag::mul(y, y)));
  };
  Generator gen(27);
  Tensor x0 = rand_leaf({3, 4}, gen), w0 = rand_leaf({4}, gen), w = rand_leaf({5, 4}, gen);
  Tensor x0c = x0.clone().set_requires_grad(), w0c = w0.clone().set_requires_grad(),
         wc = w.clone().set_requires_grad();
  int plain_calls = 0, recomputed_calls = 0;
  run(false, x0, w0, w, plain_calls);
  run(true, x0c, w0c, wc, recomputed_calls);
  EXPECT_EQ(plain_calls, 1);
  EXPECT_EQ(recomputed_calls, 1) << "the outer backward fires w's hook once; the inner grad does not";
  EXPECT_EQ(x0c.grad().to_vector(), x0.grad().to_vector());
  EXPECT_EQ(w0c.grad().to_vector(), w0.grad().to_vector());
  EXPECT_EQ(wc.grad().to_vector(), w.grad().to_vector());
}

TEST(L02_AutogradGrad, NestedInsideAGradientHook) {
  Tensor w = Tensor::from_vector({1, 2}, {2}).set_requires_grad();
  Tensor v = Tensor::from_vector({2, 3}, {2}).set_requires_grad();
  int v_calls = 0;
  HookHandle vh = v.register_grad_hook([&](Tensor&) { ++v_calls; });
  std::vector<float> inner;
  bool hooks_on_after = false;
  std::uint64_t id_before = 0, id_after = 0;
  HookHandle wh = w.register_grad_hook([&](Tensor&) {
    id_before = ag::current_backward_id();
    inner = ag::grad({ag::sum(ag::pow(v, 3.f))}, {v})[0].to_vector();  // 3v²
    id_after = ag::current_backward_id();
    hooks_on_after = ag::hooks_enabled();
  });
  ag::backward(ag::sum(ag::exp(w)));
  EXPECT_EQ(inner, (std::vector<float>{12, 27}));
  EXPECT_EQ(v_calls, 0);
  EXPECT_FALSE(v.grad().defined());
  EXPECT_NE(id_before, 0u);
  EXPECT_EQ(id_before, id_after) << "the outer backward is current again after the nested grad";
  EXPECT_TRUE(hooks_on_after);
  EXPECT_EQ(w.grad().to_vector(), (std::vector<float>{std::exp(1.f), std::exp(2.f)}));
}
