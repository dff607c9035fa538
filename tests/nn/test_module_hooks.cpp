// L03 Module hooks on a small model: the exact order of pre/post-forward and pre/post-backward
// hooks around the gradient hooks, handles that remove them, no graph node without a backward hook,
// tied / unreached / unused / repeated cases, and autograd::grad firing none of them.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "minitorch/random.h"
#include "nn/layers.h"
#include "nn/module.h"

using namespace minitorch;
namespace ag = minitorch::autograd;
using Log = std::vector<std::string>;

namespace {
struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::LayerNorm> ln;
  explicit Net(Generator& gen) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8, true, gen));
    ln = register_module("ln", std::make_shared<nn::LayerNorm>(8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 3, false, gen));
  }
  // x: (N, 4) -> (N, 3)
  Tensor forward(const Tensor& x) const {
    return call({x}, [&] { return fc2->forward(ag::gelu(ln->forward(fc1->forward(x)))); });
  }
};

std::string label(const nn::Module& m) { return m.path().empty() ? "net" : m.path(); }

/// Every hook kind on every module, and a gradient hook on every parameter, all logging to `log`.
std::vector<HookHandle> record_all(nn::Module& root, Log& log) {
  std::vector<HookHandle> h;
  for (auto& [name, p] : root.named_parameters())
    h.push_back(p.register_grad_hook([&log, n = name](Tensor&) { log.push_back("grad " + n); }));
  for (auto& [name, m] : root.named_modules()) {
    h.push_back(m->register_pre_forward_hook([&](nn::Module& mm, std::span<const Tensor>) { log.push_back("pre_fwd " + label(mm)); }));
    h.push_back(m->register_post_forward_hook(
        [&](nn::Module& mm, std::span<const Tensor>, const Tensor&) { log.push_back("post_fwd " + label(mm)); }));
    h.push_back(m->register_pre_backward_hook([&](nn::Module& mm, const Tensor&) { log.push_back("pre_bwd " + label(mm)); }));
    h.push_back(m->register_post_backward_hook([&](nn::Module& mm) { log.push_back("post_bwd " + label(mm)); }));
  }
  return h;
}
}  // namespace

TEST(L03_ModuleHooks, SmallModelExactOrder) {
  Generator gen(1);
  Net net(gen);
  Log log;
  auto handles = record_all(net, log);
  Tensor x = Tensor::randn({5, 4}, gen), r = Tensor::randn({5, 3}, gen);
  const Log forward = {"pre_fwd net", "pre_fwd fc1", "post_fwd fc1", "pre_fwd ln", "post_fwd ln",
                       "pre_fwd fc2", "post_fwd fc2", "post_fwd net"};
  // A module's post-backward comes right after its last parameter's gradient hook, children before parents.
  const Log backward = {"pre_bwd net", "pre_bwd fc2", "grad fc2.weight", "post_bwd fc2",
                        "pre_bwd ln", "grad ln.weight", "grad ln.bias", "post_bwd ln",
                        "pre_bwd fc1", "grad fc1.weight", "grad fc1.bias", "post_bwd fc1", "post_bwd net"};
  for (int step = 0; step < 2; ++step) {  // a second backward re-arms every countdown
    log.clear();
    Tensor loss = ag::sum(ag::mul(net.forward(x), r));
    EXPECT_EQ(log, forward) << "step " << step;
    log.clear();
    ag::backward(loss);
    EXPECT_EQ(log, backward) << "step " << step;
  }
}

TEST(L03_ModuleHooks, HooksSeeInputsOutputAndOutputGradient) {
  Generator gen(2);
  nn::Linear fc(4, 3, true, gen);
  Tensor x = Tensor::randn({2, 4}, gen), r = Tensor::randn({2, 3}, gen);
  Tensor seen_in, seen_out, seen_grad;
  HookHandle a = fc.register_pre_forward_hook([&](nn::Module& m, std::span<const Tensor> in) {
    EXPECT_EQ(&m, &fc);
    ASSERT_EQ(in.size(), 1u);
    seen_in = in[0];
  });
  HookHandle b = fc.register_post_forward_hook([&](nn::Module&, std::span<const Tensor>, const Tensor& out) { seen_out = out; });
  HookHandle c = fc.register_pre_backward_hook([&](nn::Module&, const Tensor& g) { seen_grad = g; });
  Tensor y = fc.forward(x);
  EXPECT_TRUE(seen_in.same(x));
  EXPECT_TRUE(seen_out.same(y)) << "post-forward sees the tensor the caller gets";
  ag::backward(ag::sum(ag::mul(y, r)));
  EXPECT_EQ(seen_grad.to_vector(), r.to_vector());  // dL/dy = r
}

TEST(L03_ModuleHooks, RegistrationOrderAndHandles) {
  Generator gen(3);
  nn::Linear fc(4, 3, true, gen);
  Tensor x = Tensor::randn({2, 4}, gen);
  std::string log;
  HookHandle a = fc.register_pre_forward_hook([&](nn::Module&, std::span<const Tensor>) { log += "a"; });
  HookHandle b = fc.register_pre_forward_hook([&](nn::Module&, std::span<const Tensor>) {
    log += "b";
    a.remove();  // removing another hook (already run) from a running one is safe
  });
  HookHandle c = fc.register_pre_forward_hook([&](nn::Module&, std::span<const Tensor>) { log += "c"; });
  fc.forward(x);
  EXPECT_EQ(log, "abc");
  fc.forward(x);
  EXPECT_EQ(log, "abcbc");
  { HookHandle gone = std::move(b); }
  fc.forward(x);
  EXPECT_EQ(log, "abcbcc");
}

TEST(L03_ModuleHooks, BackwardNodeOnlyWhileABackwardHookIsRegistered) {
  Generator gen(4);
  nn::Linear fc(4, 3, true, gen);
  Tensor x = Tensor::randn({2, 4}, gen);
  EXPECT_STREQ(fc.forward(x).grad_fn()->name(), "LinearBackward");
  HookHandle f = fc.register_post_forward_hook([](nn::Module&, std::span<const Tensor>, const Tensor&) {});
  EXPECT_STREQ(fc.forward(x).grad_fn()->name(), "LinearBackward") << "forward hooks add no node";
  {
    HookHandle b = fc.register_post_backward_hook([](nn::Module&) {});
    EXPECT_STREQ(fc.forward(x).grad_fn()->name(), "ModuleBackwardHook");
    ag::NoGradGuard no_grad;
    EXPECT_EQ(fc.forward(x).grad_fn(), nullptr);
  }
  EXPECT_STREQ(fc.forward(x).grad_fn()->name(), "LinearBackward");
}

namespace {
/// Uses `a` but never `b`: b's gradient is never final, yet post-backward must still come.
struct Partial : nn::Module {
  Tensor a, b;
  Partial() {
    a = register_parameter("a", Tensor::ones({3}));
    b = register_parameter("b", Tensor::ones({3}));
  }
  Tensor forward(const Tensor& x) const { return call({x}, [&] { return ag::mul(x, a); }); }
};
struct Outer : nn::Module {
  std::shared_ptr<Partial> part;
  std::shared_ptr<nn::Linear> unused;
  Generator gen{5};
  Outer() {
    part = register_module("part", std::make_shared<Partial>());
    unused = register_module("unused", std::make_shared<nn::Linear>(3, 3, true, gen));
  }
  Tensor forward(const Tensor& x) const {
    return call({x}, [&] {
      unused->forward(x);  // runs, but its output is not in the loss
      return ag::exp(part->forward(x));
    });
  }
};
}  // namespace

TEST(L03_ModuleHooks, UnreachedParametersReleasePostBackwardAtTheEnd) {
  Outer net;
  Log log;
  auto handles = record_all(net, log);
  Tensor loss = ag::sum(net.forward(Tensor::ones({2, 3})));
  log.clear();
  ag::backward(loss);
  // part waits for b (never reached), unused gets no gradient at all: nothing for it
  EXPECT_EQ(log, (Log{"pre_bwd net", "pre_bwd part", "grad part.a", "post_bwd part", "post_bwd net"}));
}

TEST(L03_ModuleHooks, ModuleCalledTwiceFiresPostBackwardOnceAfterBothUses) {
  Generator gen(6);
  nn::Linear fc(3, 3, true, gen);
  Log log;
  auto handles = record_all(fc, log);
  Tensor loss = ag::sum(fc.forward(ag::tanh(fc.forward(Tensor::randn({2, 3}, gen)))));
  log.clear();
  ag::backward(loss);
  EXPECT_EQ(log, (Log{"pre_bwd net", "pre_bwd net", "grad weight", "grad bias", "post_bwd net"}));
}

TEST(L03_ModuleHooks, GradFiresNoModuleBackwardHooks) {
  Generator gen(7);
  Net net(gen);
  Log log;
  auto handles = record_all(net, log);
  Tensor y = net.forward(Tensor::randn({2, 4}, gen));
  log.clear();
  auto g = ag::grad({ag::sum(y)}, {net.fc1->weight});
  EXPECT_TRUE(log.empty()) << log.front();
  EXPECT_EQ(g[0].shape(), net.fc1->weight.shape());
  EXPECT_FALSE(net.fc1->weight.grad().defined());
}
