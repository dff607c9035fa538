// L02 — the backward engine: gradients accumulate into leaves (as in PyTorch), shared inputs get
// the summed gradient, no_grad records nothing, freed graphs fail loudly, gradient hooks fire once
// per leaf as soon as its gradient is final (last layer first: what DDP buckets rely on), and
// activation memory is released by backward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"

using namespace minitorch;
namespace ag = minitorch::autograd;

namespace {

Tensor leaf(const std::vector<float>& v, const Shape& shape) {
  Tensor t = Tensor::from_vector(v, shape);
  t.set_requires_grad();
  return t;
}

void expect_vec_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

template <typename E, typename F>
void expect_throw_with(F&& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception containing '" << part << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Graph recording
// ---------------------------------------------------------------------------------------------

TEST(L02_AutogradGraph, OpsOnGradInputsRecordANode) {
  Tensor w = leaf({1, 2, 3}, {3});
  Tensor c = Tensor::from_vector({4, 5, 6}, {3});
  Tensor y = ag::mul(w, c);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_STREQ(y.grad_fn()->name(), "MulBackward");
  ASSERT_EQ(y.grad_fn()->next_edges.size(), 2u);
  EXPECT_EQ(y.grad_fn()->next_edges[0].leaf, w.impl_ptr());
  EXPECT_EQ(y.grad_fn()->next_edges[0].shape, w.shape());
  EXPECT_FALSE(y.grad_fn()->next_edges[1].defined());  // c needs no gradient: no edge
  Tensor z = ag::mul(c, c);
  EXPECT_FALSE(z.requires_grad());
  EXPECT_EQ(z.grad_fn(), nullptr);
}

TEST(L02_AutogradGraph, NoGradRecordsNoGraph) {
  Tensor w = leaf({1, 2}, {2});
  EXPECT_TRUE(ag::grad_enabled());
  {
    ag::NoGradGuard guard;
    EXPECT_FALSE(ag::grad_enabled());
    Tensor y = ag::exp(ag::mul(w, w));
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    Tensor l = ag::linear(Tensor::ones({3, 2}), Tensor::ones({4, 2}), Tensor());
    EXPECT_FALSE(l.requires_grad());
    Tensor v = ag::transpose(ag::reshape(w, {2, 1}), 0, 1);
    EXPECT_FALSE(v.requires_grad());
    {
      ag::NoGradGuard nested;
      EXPECT_FALSE(ag::grad_enabled());
    }
    EXPECT_FALSE(ag::grad_enabled());  // the inner guard restores "off", not "on"
    EXPECT_THROW(ag::backward(ag::sum(y)), std::invalid_argument);
  }
  EXPECT_TRUE(ag::grad_enabled());
  EXPECT_TRUE(ag::mul(w, w).requires_grad());
}

TEST(L02_AutogradGraph, DetachCutsTheGraph) {
  Tensor w = leaf({1, 2}, {2});
  Tensor y = ag::mul(w, w);
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.storage(), y.storage());
  Tensor loss = ag::sum(ag::add(ag::mul(d, w), y));  // d(w·w²_detached + w²)/dw = y + 2w
  ag::backward(loss);
  expect_vec_near(w.grad().to_vector(), {1 + 2, 4 + 4});
}

TEST(L02_AutogradGraph, MarkingANonLeafOrHookingItThrows) {
  Tensor w = leaf({1}, {1});
  Tensor y = ag::exp(w);
  EXPECT_THROW(y.set_requires_grad(), std::invalid_argument);
  EXPECT_THROW((void)y.register_grad_hook([](Tensor&) {}), std::invalid_argument);
  Tensor plain = Tensor::ones({1});
  EXPECT_THROW((void)plain.register_grad_hook([](Tensor&) {}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------------------------

TEST(L02_T1_Order, ChainRuleThroughSeveralOps) {
  Tensor x = leaf({0.5f, -1.f, 2.f}, {3});
  // L = sum(log(3x + 4) * exp(x)): no tanh, whose backward is task L02.2
  Tensor loss = ag::sum(ag::mul(ag::log(ag::affine(x, 3.f, 4.f)), ag::exp(x)));
  ag::backward(loss);
  std::vector<float> want;
  for (float v : {0.5f, -1.f, 2.f}) {
    const double l = std::log(3 * v + 4), e = std::exp(v);
    want.push_back(static_cast<float>(3 / (3 * v + 4) * e + l * e));
  }
  expect_vec_near(x.grad().to_vector(), want, 1e-4f);
  EXPECT_EQ(x.grad().shape(), x.shape());
  EXPECT_EQ(x.grad().dtype(), DType::f32);
}

TEST(L02_AutogradBackward, AccumulatesIntoLeavesAcrossCalls) {
  Tensor w = leaf({1, 2, 3}, {3});
  Tensor c = Tensor::from_vector({4, 5, 6}, {3});
  ag::backward(ag::sum(ag::mul(w, c)));
  expect_vec_near(w.grad().to_vector(), {4, 5, 6});
  ag::backward(ag::sum(ag::mul(w, c)));  // a second graph: adds, like PyTorch
  expect_vec_near(w.grad().to_vector(), {8, 10, 12});
  w.set_grad(Tensor());  // zero_grad by dropping
  ag::backward(ag::sum(ag::affine(w, 2.f)));
  expect_vec_near(w.grad().to_vector(), {2, 2, 2});
}

TEST(L02_AutogradBackward, TensorUsedTwiceGetsTheSummedGradient) {
  Tensor w = leaf({1, -2, 3}, {3});
  ag::backward(ag::sum(ag::mul(w, w)));  // same tensor twice in one op: 2w
  expect_vec_near(w.grad().to_vector(), {2, -4, 6});
  w.set_grad(Tensor());
  ag::backward(ag::sum(ag::add(w, w)));  // 2
  expect_vec_near(w.grad().to_vector(), {2, 2, 2});
  w.set_grad(Tensor());
  // used by two different ops: 3 + e^w
  ag::backward(ag::sum(ag::add(ag::affine(w, 3.f), ag::exp(w))));
  expect_vec_near(w.grad().to_vector(), {3 + std::exp(1.f), 3 + std::exp(-2.f), 3 + std::exp(3.f)}, 1e-4f);
}

// The order a wrong walk gets wrong: h feeds a long branch and a short one, so a node run as soon as
// one consumer has given it a gradient (pre-order, or a queue in discovery order) misses the other's.
TEST(L02_T1_Order, BranchesOfDifferentDepthBothReachTheSharedNode) {
  Tensor w = leaf({0.5f, -1.f}, {2});
  Tensor h = ag::affine(w, 2.f);                                     // h = 2w
  Tensor loss = ag::sum(ag::add(ag::exp(ag::pow(ag::exp(h), 0.5f)), h));  // L = e^{√(e^h)} + h (no tanh: L02.2)
  ag::backward(loss);
  std::vector<float> want;
  for (float v : {0.5f, -1.f}) {
    const double hv = 2 * v, r = std::sqrt(std::exp(hv));  // dL/dh = e^r · r/2 + 1
    want.push_back(static_cast<float>(2 * (std::exp(r) * r / 2 + 1)));
  }
  expect_vec_near(w.grad().to_vector(), want, 1e-4f);
}

TEST(L02_T1_Order, IntermediateUsedTwiceGetsTheSummedGradient) {
  Tensor w = leaf({1, 2}, {2});
  Tensor h = ag::affine(w, 2.f);                      // h = 2w
  Tensor loss = ag::sum(ag::add(ag::mul(h, h), h));  // L = h² + h  => dL/dw = 2(2h + 1)
  ag::backward(loss);
  expect_vec_near(w.grad().to_vector(), {2 * (4 + 1), 2 * (8 + 1)});
}

TEST(L02_AutogradBackward, GradientBuffersAreNotAliased) {
  // out = 5w + ((3w)·2 + w): the engine passes one gradient buffer to several consumers (add's
  // backward returns dout for both inputs); accumulating in place into a shared buffer, or
  // adopting it as a leaf's .grad, corrupts the other consumers' gradients.
  Tensor w = leaf({1, 1}, {2});
  Tensor q = ag::affine(w, 5.f);
  Tensor h = ag::affine(ag::affine(w, 3.f), 2.f);
  Tensor a = ag::add(h, w);
  ag::backward(ag::sum(ag::add(q, a)));
  expect_vec_near(w.grad().to_vector(), {12, 12});

  // A non-leaf fed twice through one add, plus a second non-leaf: s = h1 + h2, out = s + h1.
  Tensor w1 = leaf({1}, {1}), w2 = leaf({1}, {1});
  Tensor h1 = ag::affine(w1, 1.f), h2 = ag::affine(w2, 1.f);
  Tensor s = ag::add(h1, h2);
  ag::backward(ag::sum(ag::add(s, h1)));
  expect_vec_near(w1.grad().to_vector(), {2});
  expect_vec_near(w2.grad().to_vector(), {1});
}

TEST(L02_AutogradBackward, ExplicitGradRootIsNotModified) {
  Tensor w = leaf({1, 2, 3}, {3});
  Tensor g = Tensor::from_vector({1, 10, 100}, {3});
  ag::backward(ag::mul(w, Tensor::full({3}, 2.f)), g);
  expect_vec_near(w.grad().to_vector(), {2, 20, 200});
  // through ops whose backward passes the incoming gradient straight on
  Tensor v = leaf({0, 0, 0}, {3});
  ag::backward(ag::contiguous(ag::add(v, v)), g);
  ag::backward(ag::add(v, Tensor::zeros({3})), g);
  expect_vec_near(v.grad().to_vector(), {3, 30, 300});
  // and a leaf as the root: dw/dw = g, twice
  Tensor u = leaf({5, 5, 5}, {3});
  ag::backward(u, g);
  ag::backward(u, g);
  expect_vec_near(u.grad().to_vector(), {2, 20, 200});
  expect_vec_near(g.to_vector(), {1, 10, 100});  // the caller's tensor is untouched
}

TEST(L02_AutogradBackward, GradRootShapeMustMatch) {
  Tensor w = leaf({1, 2, 3}, {3});
  Tensor y = ag::affine(w, 2.f);
  EXPECT_THROW(ag::backward(y, Tensor::ones({4})), std::invalid_argument);
}

TEST(L02_AutogradBackward, NonScalarRootNeedsAnExplicitGradient) {
  Tensor w = leaf({1, 2}, {2});
  expect_throw_with<std::invalid_argument>([&] { ag::backward(ag::exp(w)); }, "grad_root");
}

TEST(L02_AutogradBackward, BackwardOnANonGradTensorThrows) {
  Tensor x = Tensor::ones({1});
  expect_throw_with<std::invalid_argument>([&] { ag::backward(x); }, "does not require grad");
  expect_throw_with<std::invalid_argument>([&] { ag::backward(ag::exp(x)); }, "does not require grad");
}

TEST(L02_AutogradBackward, SecondBackwardThroughAFreedGraphThrows) {
  Tensor w = leaf({1, 2}, {2});
  Tensor loss = ag::sum(ag::mul(ag::exp(w), w));
  ag::backward(loss);
  expect_throw_with<std::runtime_error>([&] { ag::backward(loss); }, "already freed");
  // a second root that shares a freed part of the graph fails too
  Tensor h = ag::exp(w);
  Tensor l1 = ag::sum(h), l2 = ag::mean(h);
  ag::backward(l1);
  expect_throw_with<std::runtime_error>([&] { ag::backward(l2); }, "ExpBackward");
}

TEST(L02_AutogradBackward, LeafAsRoot) {
  Tensor w = leaf({7}, {1});
  int calls = 0;
  HookHandle hook = w.register_grad_hook([&](Tensor&) { ++calls; });
  ag::backward(w);
  expect_vec_near(w.grad().to_vector(), {1});
  EXPECT_EQ(calls, 1);
}

TEST(L02_AutogradBackward, UnusedLeafGetsNoGradient) {
  Tensor used = leaf({1}, {1}), unused = leaf({2}, {1});
  int calls = 0;
  HookHandle hook = unused.register_grad_hook([&](Tensor&) { ++calls; });
  ag::backward(ag::sum(ag::exp(used)));
  EXPECT_TRUE(used.grad().defined());
  EXPECT_FALSE(unused.grad().defined());
  EXPECT_EQ(calls, 0);
}

TEST(L02_AutogradBackward, GradientsAreTaggedGradAndShapedLikeTheLeaf) {
  Generator gen(3);
  Tensor w, b;
  {
    TagScope scope(MemTag::param);
    w = Tensor::randn({5, 4}, gen).set_requires_grad();
    b = Tensor::zeros({5}).set_requires_grad();
  }
  Tensor x = Tensor::randn({3, 4}, gen);
  MemoryStats before = memory_stats();
  ag::backward(ag::sum(ag::linear(x, w, b)));
  ASSERT_TRUE(w.grad().defined());
  ASSERT_TRUE(b.grad().defined());
  EXPECT_EQ(w.grad().shape(), w.shape());
  EXPECT_EQ(b.grad().shape(), b.shape());
  EXPECT_EQ(w.grad().storage()->tag(), MemTag::grad);
  EXPECT_EQ(b.grad().storage()->tag(), MemTag::grad);
  EXPECT_EQ(memory_stats().current(MemTag::grad) - before.current(MemTag::grad), 20 * 4 + 5 * 4);
  EXPECT_TRUE(w.grad().is_contiguous());
  EXPECT_FALSE(w.grad().requires_grad());
}

namespace {
/// A custom op whose backward declines to pass a gradient on (like a stop-gradient that still
/// records an edge): y = x, dx = undefined.
struct BlockBackward : ag::Node {
  const char* name() const override { return "BlockBackward"; }
  std::vector<Tensor> backward(const Tensor&) override { return {Tensor()}; }
};
Tensor block(const Tensor& x) { return ag::record(x.clone(), std::make_shared<BlockBackward>(), {x}); }
}  // namespace

TEST(L02_T1_Order, NodeReachedByNoGradientIsSkipped) {
  Tensor w = leaf({0.5f, 1.5f}, {2});
  int calls = 0;
  HookHandle hook = w.register_grad_hook([&](Tensor&) { ++calls; });
  // exp's node is in the graph but no gradient reaches it; w still gets add's gradient and its hook
  Tensor loss = ag::sum(ag::add(block(ag::exp(w)), w));
  ag::backward(loss);
  expect_vec_near(w.grad().to_vector(), {1, 1});
  EXPECT_EQ(calls, 1);
}

TEST(L02_AutogradBackward, LinearGradientsMatchTheFormulasAtScale) {
  // Big enough for the kernels' blocked and multi-threaded paths (run with MINITORCH_NUM_THREADS=2).
  Generator gen(12);
  const int N = 64, I = 96, O = 80;
  Tensor x = Tensor::randn({N, I}, gen).set_requires_grad();
  Tensor w = Tensor::randn({O, I}, gen).set_requires_grad();
  Tensor b = Tensor::randn({O}, gen).set_requires_grad();
  Tensor r = Tensor::randn({N, O}, gen);
  ag::backward(ag::sum(ag::mul(ag::linear(x, w, b), r)));
  auto xv = x.to_vector(), wv = w.to_vector(), rv = r.to_vector();
  auto gx = x.grad().to_vector(), gw = w.grad().to_vector(), gb = b.grad().to_vector();
  for (int n = 0; n < N; ++n)  // dx = r W
    for (int i = 0; i < I; ++i) {
      double s = 0;
      for (int o = 0; o < O; ++o) s += double(rv[n * O + o]) * wv[o * I + i];
      ASSERT_NEAR(gx[n * I + i], s, 1e-3) << "dx " << n << "," << i;
    }
  for (int o = 0; o < O; ++o) {  // dW = r^T x, db = column sums of r
    double sb = 0;
    for (int n = 0; n < N; ++n) sb += rv[n * O + o];
    ASSERT_NEAR(gb[o], sb, 1e-3) << "db " << o;
    for (int i = 0; i < I; ++i) {
      double s = 0;
      for (int n = 0; n < N; ++n) s += double(rv[n * O + o]) * xv[n * I + i];
      ASSERT_NEAR(gw[o * I + i], s, 1e-3) << "dW " << o << "," << i;
    }
  }
}

TEST(L02_AutogradBackward, LargeElementwiseChain) {
  // 256 x 256 = 65536 elements: above the kernels' single-thread grain.
  Generator gen(13);
  Tensor a = Tensor::uniform({256, 256}, gen, 0.5f, 1.5f).set_requires_grad();
  Tensor c = Tensor::uniform({256}, gen, 0.5f, 1.5f);
  ag::backward(ag::sum(ag::log(ag::mul(ag::exp(a), c))));  // d/da log(e^a c) = 1
  for (float g : a.grad().to_vector()) ASSERT_NEAR(g, 1.f, 1e-5f);
  Tensor m = Tensor::uniform({256, 256}, gen).set_requires_grad();
  ag::backward(ag::mean(ag::pow(m, 2.f)));  // 2m / numel
  auto mv = m.to_vector(), gm = m.grad().to_vector();
  for (std::size_t i = 0; i < mv.size(); ++i) ASSERT_NEAR(gm[i], 2 * mv[i] / 65536.f, 1e-9f) << i;
}

// ---------------------------------------------------------------------------------------------
// Gradient hooks
// ---------------------------------------------------------------------------------------------

TEST(L02_AutogradHooks, FireOncePerLeafPerBackwardWithTheFullGradient) {
  Tensor w = leaf({1, 2}, {2});
  Tensor a = Tensor::from_vector({3, 4}, {2}), b = Tensor::from_vector({10, 20}, {2});
  int calls = 0;
  std::vector<float> seen;
  HookHandle hook = w.register_grad_hook([&](Tensor& t) {
    ++calls;
    EXPECT_TRUE(t.same(w));
    seen = t.grad().to_vector();
  });
  // w feeds three consumers: two muls and an exp; the hook must see a + b + e^w, not a partial sum
  Tensor loss = ag::sum(ag::add(ag::add(ag::mul(w, a), ag::mul(b, w)), ag::exp(w)));
  ag::backward(loss);
  EXPECT_EQ(calls, 1);
  expect_vec_near(seen, {3 + 10 + std::exp(1.f), 4 + 20 + std::exp(2.f)}, 1e-4f);
  // a second backward: the hook fires once more and sees the accumulated gradient
  ag::backward(ag::sum(ag::mul(w, a)));
  EXPECT_EQ(calls, 2);
  expect_vec_near(seen, {3 + 10 + std::exp(1.f) + 3, 4 + 20 + std::exp(2.f) + 4}, 1e-4f);
}

TEST(L02_AutogradHooks, SameTensorTwiceInOneOpFiresOnce) {
  Tensor w = leaf({3}, {1});
  int calls = 0;
  float seen = 0;
  HookHandle hook = w.register_grad_hook([&](Tensor& t) {
    ++calls;
    seen = t.grad().item();
  });
  ag::backward(ag::sum(ag::mul(w, w)));
  EXPECT_EQ(calls, 1);
  EXPECT_FLOAT_EQ(seen, 6.f);
}

TEST(L02_AutogradHooks, SeveralHooksOnOneLeafRunInRegistrationOrder) {
  Tensor w = leaf({1}, {1});
  std::string log;
  HookHandle hook_a = w.register_grad_hook([&](Tensor&) { log += "a"; });
  HookHandle hook_b = w.register_grad_hook([&](Tensor&) { log += "b"; });
  ag::backward(ag::sum(ag::exp(w)));
  EXPECT_EQ(log, "ab");
}

TEST(L02_AutogradHooks, FireInReverseOrderOfUseForAChainOfLayers) {
  // A 4-layer MLP: each parameter's hook must fire before any parameter of an earlier layer, and
  // while the earlier layers' gradients are still pending (DDP starts reducing from here).
  Generator gen(7);
  const int L = 4, C = 6;
  std::vector<Tensor> ws, bs;
  std::vector<std::string> order;
  std::map<std::string, bool> earlier_pending;  // at hook time, was layer 0's weight still ungraded?
  std::vector<HookHandle> hooks;
  for (int l = 0; l < L; ++l) {
    ws.push_back(Tensor::randn({C, C}, gen, 0.f, 0.3f).set_requires_grad());
    bs.push_back(Tensor::zeros({C}).set_requires_grad());
  }
  for (int l = 0; l < L; ++l) {
    std::string wn = "w" + std::to_string(l), bn = "b" + std::to_string(l);
    hooks.push_back(ws[l].register_grad_hook([&, wn](Tensor&) {
      order.push_back(wn);
      earlier_pending[wn] = !ws[0].grad().defined();
    }));
    hooks.push_back(bs[l].register_grad_hook([&, bn](Tensor&) { order.push_back(bn); }));
  }
  Tensor h = Tensor::randn({5, C}, gen);
  for (int l = 0; l < L; ++l) h = ag::tanh(ag::linear(h, ws[l], bs[l]));
  ag::backward(ag::mean(h));
  ASSERT_EQ(order.size(), static_cast<std::size_t>(2 * L));
  auto pos = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  for (int l = 1; l < L; ++l) {
    for (const char* p : {"w", "b"})
      for (const char* q : {"w", "b"})
        EXPECT_LT(pos(p + std::to_string(l)), pos(q + std::to_string(l - 1)))
            << p << l << " should fire before " << q << l - 1;
  }
  for (int l = 1; l < L; ++l) EXPECT_TRUE(earlier_pending["w" + std::to_string(l)]) << "layer " << l;
}

TEST(L02_AutogradHooks, TiedWeightFiresOnlyAfterItsLastUse) {
  // Like GPT's tied wte / lm_head: the weight is used first (embedding) and last (head).
  Generator gen(9);
  Tensor wte = Tensor::randn({7, 4}, gen).set_requires_grad();
  Tensor mid = Tensor::randn({4, 4}, gen, 0.f, 0.5f).set_requires_grad();
  std::vector<std::string> order;
  float seen_norm = -1;
  HookHandle wte_hook = wte.register_grad_hook([&](Tensor& t) {
    order.push_back("wte");
    double s = 0;
    for (float v : t.grad().to_vector()) s += v * v;
    seen_norm = static_cast<float>(s);
  });
  HookHandle mid_hook = mid.register_grad_hook([&](Tensor&) { order.push_back("mid"); });
  Tensor idx = Tensor::from_ints({1, 3, 3}, {3});
  Tensor h = ag::embedding(wte, idx);                 // (3, 4)
  h = ag::tanh(ag::linear(h, mid, Tensor()));         // (3, 4)
  Tensor logits = ag::linear(h, wte, Tensor());       // (3, 7), tied head
  ag::backward(ag::cross_entropy(logits, Tensor::from_ints({0, 6, 2}, {3})));
  EXPECT_EQ(order, (std::vector<std::string>{"mid", "wte"}));
  double s = 0;
  for (float v : wte.grad().to_vector()) s += v * v;
  EXPECT_FLOAT_EQ(seen_norm, static_cast<float>(s));  // the hook saw the final gradient
}

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

TEST(L02_AutogradMemory, ActivationMemoryIsFreedByBackward) {
  Generator gen(5);
  Tensor w1, b1, w2, b2;
  {
    TagScope scope(MemTag::param);
    w1 = Tensor::randn({32, 16}, gen).set_requires_grad();
    b1 = Tensor::zeros({32}).set_requires_grad();
    w2 = Tensor::randn({10, 32}, gen).set_requires_grad();
    b2 = Tensor::zeros({10}).set_requires_grad();
  }
  Tensor x = Tensor::randn({8, 16}, gen);
  Tensor targets = Tensor::from_ints({0, 1, 2, 3, 4, 5, 6, 7}, {8});
  const std::int64_t base = memory_stats().current(MemTag::activation);
  Tensor loss;
  {
    TagScope scope(MemTag::activation);
    Tensor h = ag::gelu(ag::linear(x, w1, b1));
    h = ag::layernorm(h, Tensor::ones({32}), Tensor::zeros({32}));
    loss = ag::cross_entropy(ag::linear(h, w2, b2), targets);
  }
  // the graph keeps the activations alive: at least the (8, 32) hidden states
  EXPECT_GE(memory_stats().current(MemTag::activation) - base, 8 * 32 * 4);
  ag::backward(loss);
  // only the loss itself is left
  EXPECT_EQ(memory_stats().current(MemTag::activation) - base,
            loss.storage()->tag() == MemTag::activation ? static_cast<std::int64_t>(loss.storage()->nbytes()) : 0);
  loss = Tensor();
  EXPECT_EQ(memory_stats().current(MemTag::activation), base);
  EXPECT_EQ(w1.grad().shape(), w1.shape());
}

TEST(L02_AutogradMemory, NoGradForwardKeepsNoActivations) {
  Generator gen(6);
  Tensor w = Tensor::randn({16, 16}, gen).set_requires_grad();
  Tensor x = Tensor::randn({4, 16}, gen);
  const std::int64_t base = memory_stats().current(MemTag::activation);
  Tensor y;
  {
    TagScope scope(MemTag::activation);
    ag::NoGradGuard guard;
    y = ag::gelu(ag::linear(ag::gelu(ag::linear(x, w, Tensor())), w, Tensor()));
  }
  EXPECT_EQ(memory_stats().current(MemTag::activation) - base, static_cast<std::int64_t>(y.storage()->nbytes()));
}
