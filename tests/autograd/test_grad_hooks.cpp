// L02 — gradient hooks are removable and ordered: a hook lives as long as its handle, hooks run in
// registration order, and removing or adding hooks while a backward runs them is safe. Plus the
// engine's end-of-backward callbacks (what module post-backward hooks use for unreached parameters).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "minitorch/tensor.h"

using namespace minitorch;
namespace ag = minitorch::autograd;

namespace {
Tensor leaf(const std::vector<float>& v) { return Tensor::from_vector(v, {static_cast<std::int64_t>(v.size())}).set_requires_grad(); }
}  // namespace

TEST(L02_GradHookHandles, HookLivesAsLongAsItsHandle) {
  Tensor w = leaf({1, 2});
  int calls = 0;
  {
    HookHandle h = w.register_grad_hook([&](Tensor&) { ++calls; });
    EXPECT_TRUE(h.active());
    ag::backward(ag::sum(ag::mul(w, w)));
    EXPECT_EQ(calls, 1);
  }
  ag::backward(ag::sum(ag::mul(w, w)));
  EXPECT_EQ(calls, 1) << "the handle is gone, so is the hook";
  HookHandle h = w.register_grad_hook([&](Tensor&) { ++calls; });
  h.remove();
  ag::backward(ag::sum(w));
  EXPECT_EQ(calls, 1);
}

TEST(L02_GradHookHandles, RegistrationOrderSurvivesRemovals) {
  Tensor w = leaf({1});
  std::string log;
  HookHandle a = w.register_grad_hook([&](Tensor&) { log += "a"; });
  HookHandle b = w.register_grad_hook([&](Tensor&) { log += "b"; });
  HookHandle c = w.register_grad_hook([&](Tensor&) { log += "c"; });
  b.remove();
  HookHandle d = w.register_grad_hook([&](Tensor&) { log += "d"; });
  ag::backward(ag::sum(ag::exp(w)));
  EXPECT_EQ(log, "acd");
}

TEST(L02_GradHookHandles, RemovingDuringBackwardIsSafe) {
  // w2 is used after w1 in forward, so its gradient is final first: its hook runs before w1's.
  Tensor w1 = leaf({1, 2}), w2 = leaf({3, 4});
  std::string log;
  HookHandle w1_hook, self, later;
  HookHandle w2_hook = w2.register_grad_hook([&](Tensor&) {
    log += "w2 ";
    w1_hook.remove();  // another leaf's hook that has not run yet: it does not run
  });
  self = w1.register_grad_hook([&](Tensor&) {
    log += "self ";
    self.remove();  // itself, while running
    later.remove();  // a hook after it on the same leaf: skipped in this call already
  });
  later = w1.register_grad_hook([&](Tensor&) { log += "later "; });
  w1_hook = w1.register_grad_hook([&](Tensor&) { log += "w1 "; });
  ag::backward(ag::sum(ag::mul(ag::tanh(w1), w2)));
  EXPECT_EQ(log, "w2 self ");
  ASSERT_TRUE(w1.grad().defined());
  log.clear();
  ag::backward(ag::sum(ag::mul(ag::tanh(w1), w2)));
  EXPECT_EQ(log, "w2 ");
}

TEST(L02_GradHookHandles, HookAddedDuringBackwardRunsFromTheNextOne) {
  Tensor w = leaf({1});
  std::string log;
  HookHandle added;
  HookHandle first = w.register_grad_hook([&](Tensor&) {
    log += "1";
    if (!added.active()) added = w.register_grad_hook([&](Tensor&) { log += "2"; });
  });
  ag::backward(ag::sum(w));
  EXPECT_EQ(log, "1");
  ag::backward(ag::sum(w));
  EXPECT_EQ(log, "112");
}

TEST(L02_GradHookHandles, HandleMayOutliveTheTensor) {
  HookHandle h;
  {
    Tensor w = leaf({1});
    h = w.register_grad_hook([](Tensor&) {});
  }
  EXPECT_TRUE(h.active());
  h.remove();  // the tensor is gone: nothing to remove, no crash
  EXPECT_FALSE(h.active());
}

TEST(L02_GradHookHandles, HookHoldsNoReferenceToTheTensor) {
  std::weak_ptr<TensorImpl> weak;
  HookHandle h;
  {
    Tensor w = leaf({1});
    weak = w.impl_ptr();
    h = w.register_grad_hook([](Tensor&) {});
  }
  EXPECT_TRUE(weak.expired()) << "a handle must not keep its tensor (a parameter) alive";
}

// ---------------------------------------------------------------------------------------------
// End-of-backward callbacks and the backward id
// ---------------------------------------------------------------------------------------------

TEST(L02_AutogradCallbacks, RunAfterEveryNodeAndHookInQueueOrder) {
  Tensor w1 = leaf({1, 2}), w2 = leaf({3});
  std::vector<std::string> log;
  HookHandle h2 = w2.register_grad_hook([&](Tensor&) {
    log.push_back("w2 hook");
    ag::queue_callback([&] {
      log.push_back("callback 1");
      ag::queue_callback([&] { log.push_back("callback 3"); });  // queued by a callback: runs too
    });
    ag::queue_callback([&] { log.push_back("callback 2"); });
  });
  HookHandle h1 = w1.register_grad_hook([&](Tensor&) { log.push_back("w1 hook"); });
  ag::backward(ag::sum(ag::mul(ag::exp(w1), w2)));
  EXPECT_EQ(log, (std::vector<std::string>{"w2 hook", "w1 hook", "callback 1", "callback 2", "callback 3"}));
}

TEST(L02_AutogradCallbacks, QueueOutsideABackwardThrows) {
  EXPECT_THROW(ag::queue_callback([] {}), std::logic_error);
  EXPECT_EQ(ag::current_backward_id(), 0u);
  EXPECT_TRUE(ag::hooks_enabled());
}

TEST(L02_AutogradCallbacks, EachBackwardHasItsOwnId) {
  Tensor w = leaf({1});
  std::vector<std::uint64_t> ids;
  HookHandle h = w.register_grad_hook([&](Tensor&) { ids.push_back(ag::current_backward_id()); });
  ag::backward(ag::sum(ag::exp(w)));
  ag::backward(ag::sum(ag::exp(w)));
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_NE(ids[0], 0u);
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_EQ(ag::current_backward_id(), 0u);
}

TEST(L02_AutogradCallbacks, DroppedWhenTheBackwardThrows) {
  Tensor w = leaf({1});
  int ran = 0;
  HookHandle h = w.register_grad_hook([&](Tensor&) {
    ag::queue_callback([&] { ++ran; });
    throw std::runtime_error("hook failed");
  });
  EXPECT_THROW(ag::backward(ag::sum(ag::exp(w))), std::runtime_error);
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(ag::current_backward_id(), 0u) << "the failed backward no longer counts as running";
}
