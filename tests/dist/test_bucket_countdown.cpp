// dist::BucketCountdown, the one countdown DDP and the ZeRO stages launch their buckets from: a bucket is
// ready when the hook of its last parameter fires, whatever order its parameters finish in; disarmed, the
// hooks change nothing; reset() counts every bucket again. The hooks are fired here as backward fires them
// (the leaf's hook list), so the test needs no graph.
#include <gtest/gtest.h>

#include <vector>

#include "dist/bucket_countdown.h"

using namespace minitorch;

namespace {
void grad_is_final(Tensor& leaf) { leaf.impl().grad_hooks.call(leaf); }
}  // namespace

TEST(L05_BucketCountdown, ABucketIsReadyWhenItsLastParameterIsFinal) {
  std::vector<Tensor> p;
  for (int i = 0; i < 5; ++i) p.push_back(Tensor::zeros({2}).set_requires_grad());
  std::vector<std::size_t> ready;
  int polls = 0;
  dist::BucketCountdown countdown({{p[0], p[1]}, {p[2]}, {p[3], p[4]}}, [&](std::size_t b) { ready.push_back(b); },
                                  [&] { ++polls; });
  grad_is_final(p[4]);
  EXPECT_TRUE(ready.empty());
  grad_is_final(p[2]);  // bucket 1 has one parameter
  grad_is_final(p[3]);  // bucket 2's second: ready
  grad_is_final(p[1]);
  EXPECT_FALSE(countdown.fired(0));
  grad_is_final(p[0]);
  EXPECT_EQ(ready, (std::vector<std::size_t>{1, 2, 0}));
  EXPECT_EQ(polls, 5) << "every armed hook lets the collectives in flight progress";
  EXPECT_TRUE(countdown.fired(0) && countdown.fired(1) && countdown.fired(2));

  // Disarmed (gradient accumulation): nothing counts, nothing fires.
  countdown.reset();
  countdown.set_armed(false);
  for (Tensor& t : p) grad_is_final(t);
  EXPECT_EQ(ready.size(), 3u);
  EXPECT_EQ(polls, 5);
  EXPECT_FALSE(countdown.fired(0));

  // Armed again after a reset: the buckets count all their parameters again.
  countdown.set_armed(true);
  grad_is_final(p[0]);
  EXPECT_EQ(ready.size(), 3u) << "bucket 0 still waits for p[1]";
  grad_is_final(p[1]);
  EXPECT_EQ(ready.back(), 0u);
}

TEST(L05_BucketCountdown, ItsHooksGoWithIt) {
  Tensor p = Tensor::zeros({2}).set_requires_grad();
  int fired = 0;
  {
    dist::BucketCountdown countdown({{p}}, [&](std::size_t) { ++fired; });
    grad_is_final(p);
  }
  grad_is_final(p);  // the countdown is gone: its hook must not run (it would touch freed memory)
  EXPECT_EQ(fired, 1);
}
