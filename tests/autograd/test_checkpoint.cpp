// L08 — activation checkpointing (autograd/checkpoint.h): a segment run without a graph and recomputed in
// backward gives the gradients of the plain run (finite differences, bit equality), captured parameters'
// hooks fire once, nesting works, the activations kept are the segment's inputs only, and the two ways it
// can be misused are one clear error each.
// Tasks (labs/tasks/L08.json): L08_T1_* is checkpoint()'s forward (autograd/checkpoint.cpp: checkpoint),
// L08_T2_* the recompute in CheckpointBackward::backward.
#include <gtest/gtest.h>

#include "autograd/checkpoint.h"
#include "autograd/engine.h"
#include "gradcheck_helpers.h"
#include "minitorch/allocator.h"

namespace ag = minitorch::autograd;
using minitorch::Generator;
using minitorch::MemTag;
using minitorch::TagScope;
using minitorch::Tensor;
using mt_test::Inputs;

namespace {

// A small MLP segment: tanh(x W1) W2 — x: (4, 6), W1: (6, 8), W2: (8, 5) -> (4, 5).
Tensor mlp(const Tensor& x, const Tensor& w1, const Tensor& w2) {
  return ag::matmul(ag::tanh(ag::matmul(x, w1)), w2);
}

}  // namespace

TEST(L08_T2_Recompute, GradcheckWithTheInputsPassedIn) {
  Generator gen(1);
  Inputs in = {mt_test::rand_leaf({4, 6}, gen), mt_test::rand_leaf({6, 8}, gen), mt_test::rand_leaf({8, 5}, gen)};
  auto f = [](const Inputs& v) {
    return ag::checkpoint([](const Inputs& s) { return mlp(s[0], s[1], s[2]); }, v);
  };
  EXPECT_GRADCHECK(f, in);
  ag::GradcheckOptions via_grad;
  via_grad.via_grad = true;
  EXPECT_GRADCHECK(f, in, via_grad);
}

TEST(L08_T2_Recompute, GradcheckWithCapturedParameters) {
  // The parameters are not the segment's inputs: their gradients come from the nested backward.
  Generator gen(2);
  Inputs in = {mt_test::rand_leaf({4, 6}, gen), mt_test::rand_leaf({6, 8}, gen), mt_test::rand_leaf({8, 5}, gen)};
  auto f = [](const Inputs& v) {
    Tensor w1 = v[1], w2 = v[2];
    return ag::checkpoint([w1, w2](const Inputs& s) { return mlp(s[0], w1, w2); }, {v[0]});
  };
  EXPECT_GRADCHECK(f, in);
}

TEST(L08_T2_Recompute, NestedSegmentsGradcheck) {
  Generator gen(3);
  Inputs in = {mt_test::rand_leaf({4, 6}, gen), mt_test::rand_leaf({6, 6}, gen), mt_test::rand_leaf({6, 6}, gen)};
  auto f = [](const Inputs& v) {
    Tensor w1 = v[1], w2 = v[2];
    auto inner = [w2](const Inputs& s) { return ag::tanh(ag::matmul(s[0], w2)); };
    auto outer = [w1, inner](const Inputs& s) {
      Tensor h = ag::tanh(ag::matmul(s[0], w1));
      return ag::add(ag::checkpoint(inner, {h}), h);
    };
    return ag::checkpoint(outer, {v[0]});
  };
  EXPECT_GRADCHECK(f, in);
}

TEST(L08_T2_Recompute, GradientsAreBitIdenticalToThePlainRunAndHooksFireOncePerSegment) {
  Generator gen(4);
  Tensor x = mt_test::rand_leaf({4, 6}, gen), w1 = mt_test::rand_leaf({6, 8}, gen), w2 = mt_test::rand_leaf({8, 5}, gen);
  ag::backward(ag::sum(ag::mul(mlp(x, w1, w2), mlp(x, w1, w2))));
  std::vector<float> gx = x.grad().to_vector(), g1 = w1.grad().to_vector(), g2 = w2.grad().to_vector();
  for (Tensor* t : {&x, &w1, &w2}) t->set_grad(Tensor());

  int hooks_w1 = 0, hooks_w2 = 0;
  auto h1 = w1.register_grad_hook([&](Tensor&) { ++hooks_w1; });
  auto h2 = w2.register_grad_hook([&](Tensor&) { ++hooks_w2; });
  auto seg = [&](const Inputs& s) { return mlp(s[0], w1, w2); };
  Tensor y1 = ag::checkpoint(seg, {x}), y2 = ag::checkpoint(seg, {x});
  ag::backward(ag::sum(ag::mul(y1, y2)));
  EXPECT_EQ(x.grad().to_vector(), gx);
  EXPECT_EQ(w1.grad().to_vector(), g1);
  EXPECT_EQ(w2.grad().to_vector(), g2);
  // Each segment's recompute is its own backward: a parameter used by two segments is final twice,
  // as a parameter used by two checkpointed blocks would be (minitorch's GPT blocks share none).
  EXPECT_EQ(hooks_w1, 2);
  EXPECT_EQ(hooks_w2, 2);
}

TEST(L08_T1_Checkpoint, KeepsOnlyTheSegmentInputsAsActivations) {
  Generator gen(5);
  Tensor w = mt_test::rand_leaf({64, 64}, gen);
  Tensor x = Tensor::randn({32, 64}, gen);
  auto seg = [&](const Inputs& s) {
    Tensor h = s[0];
    for (int i = 0; i < 4; ++i) h = ag::tanh(ag::matmul(h, w));  // each step saves its (32, 64) input and output
    return h;
  };
  std::int64_t peak = 0;  // of the last call, above what was held before it
  auto activation_after = [&](bool use_checkpoint) {
    TagScope tag(MemTag::activation);
    const std::int64_t before = minitorch::memory_stats().current(MemTag::activation);
    minitorch::reset_peak_memory();
    Tensor xin = ag::affine(ag::mul(x, x), 1.f);  // a non-leaf input, made inside the scope
    Tensor y = use_checkpoint ? ag::checkpoint(seg, {xin}) : seg({xin});
    peak = minitorch::memory_stats().peak(MemTag::activation) - before;
    return minitorch::memory_stats().current(MemTag::activation) - before;  // y and its graph die here
  };
  const std::int64_t plain = activation_after(false), plain_peak = peak;
  const std::int64_t ckpt = activation_after(true), ckpt_peak = peak;
  const std::int64_t block = 32 * 64 * 4;  // one (32, 64) f32 activation
  // Plain: xin and the four tanh outputs (each matmul saves its input, each tanh its output; the
  // matmul outputs die at once). Checkpointed: xin (the node's saved input) and y only.
  EXPECT_EQ(plain, 5 * block);
  EXPECT_EQ(ckpt, 2 * block);
  // And not even for a moment: a forward that records the graph and drops it afterwards (detaching y)
  // ends with the same bytes held, but its peak is the plain run's. Without a graph each (32, 64)
  // intermediate dies as soon as the next one is made.
  EXPECT_EQ(plain_peak, 6 * block) << "plain: xin, the four tanh outputs and one matmul output in flight";
  EXPECT_LE(ckpt_peak, 4 * block) << "the segment's forward kept its activations while it ran (a graph was recorded)";
}

TEST(L08_T2_Recompute, GradThroughASegmentWithCapturedParametersIsOneClearError) {
  Generator gen(6);
  Tensor x = mt_test::rand_leaf({4, 6}, gen), w1 = mt_test::rand_leaf({6, 8}, gen), w2 = mt_test::rand_leaf({8, 5}, gen);
  w1.impl().name = "w1";
  Tensor y = ag::checkpoint([&](const Inputs& s) { return mlp(s[0], w1, w2); }, {x});
  try {
    ag::grad({ag::sum(y)}, {x});
    FAIL() << "grad() through captured parameters must throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint: autograd::grad through a checkpointed segment"), std::string::npos)
        << e.what();
  }
}

TEST(L08_T2_Recompute, ASecondBackwardThroughTheSegmentIsAnError) {
  Generator gen(7);
  Tensor x = mt_test::rand_leaf({4, 6}, gen), w1 = mt_test::rand_leaf({6, 8}, gen), w2 = mt_test::rand_leaf({8, 5}, gen);
  Tensor loss = ag::sum(ag::checkpoint([&](const Inputs& s) { return mlp(s[0], w1, w2); }, {x}));
  ag::backward(loss);
  EXPECT_THROW(ag::backward(loss), std::runtime_error);
}

TEST(L08_T1_Checkpoint, WithoutGradModeItIsJustTheFunction) {
  Generator gen(8);
  Tensor x = mt_test::rand_leaf({4, 6}, gen), w1 = mt_test::rand_leaf({6, 8}, gen), w2 = mt_test::rand_leaf({8, 5}, gen);
  ag::NoGradGuard no_grad;
  Tensor y = ag::checkpoint([&](const Inputs& s) { return mlp(s[0], w1, w2); }, {x});
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.to_vector(), mlp(x, w1, w2).to_vector());
}

// L08.1's typical mistake: connecting the output only when an input wants a gradient. A GPT block's input
// can come from a frozen (or no-grad) stage, and the block's parameters must still train.
TEST(L08_T1_Checkpoint, TheOutputJoinsTheGraphEvenWhenNoInputWantsAGradient) {
  Generator gen(9);
  Tensor x = Tensor::randn({4, 6}, gen);  // no gradient wanted
  Tensor w1 = mt_test::rand_leaf({6, 8}, gen), w2 = mt_test::rand_leaf({8, 5}, gen);
  Tensor y = ag::checkpoint([&](const Inputs& s) { return mlp(s[0], w1, w2); }, {x});
  ASSERT_TRUE(y.requires_grad()) << "the segment's parameters want gradients: y must be part of the graph";
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_STREQ(y.grad_fn()->name(), "CheckpointBackward");
}

// L08.2's typical mistakes: recomputing without recording (under NoGradGuard, "nothing to differentiate"),
// so no gradient comes back (this test: w0, w1, w2 get none); and recomputing from the saved inputs
// themselves instead of detached copies, so a leaf input's gradient is written by the nested backward and
// handed back again (GradientsAreBitIdentical...: x.grad() doubled; the gradchecks fail). An input made
// upstream from a parameter w0, also used after the segment, gets its gradient exactly once.
TEST(L08_T2_Recompute, AnInputFromUpstreamGetsItsGradientOnceAndTheGraphBeforeIsLeftAlone) {
  Generator gen(10);
  Tensor x = Tensor::randn({4, 6}, gen);
  Tensor w0 = mt_test::rand_leaf({6, 6}, gen), w1 = mt_test::rand_leaf({6, 8}, gen), w2 = mt_test::rand_leaf({8, 5}, gen);
  auto loss_of = [&](bool use_checkpoint) {
    Tensor h = ag::tanh(ag::matmul(x, w0));  // (4, 6), a non-leaf input with a graph behind it
    auto seg = [&](const Inputs& s) { return mlp(s[0], w1, w2); };
    Tensor y = use_checkpoint ? ag::checkpoint(seg, {h}) : seg({h});
    return ag::add(ag::sum(ag::mul(y, y)), ag::sum(h));
  };
  ag::backward(loss_of(false));
  std::vector<float> g0 = w0.grad().to_vector(), g1 = w1.grad().to_vector(), g2 = w2.grad().to_vector();
  for (Tensor* t : {&w0, &w1, &w2}) t->set_grad(Tensor());
  ag::backward(loss_of(true));
  ASSERT_TRUE(w0.grad().defined() && w1.grad().defined() && w2.grad().defined());
  EXPECT_EQ(w0.grad().to_vector(), g0);
  EXPECT_EQ(w1.grad().to_vector(), g1);
  EXPECT_EQ(w2.grad().to_vector(), g2);
}
