// L03 Releasable parameters: graph nodes refer to a parameter, not to its bytes, so releasing the
// parameters after forward frees exactly their memory, re-materialising them before backward gives
// bit-identical gradients, and a backward that meets a released parameter names it.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "nn/gpt.h"
#include "nn/gpt_test_util.h"
#include "nn/layers.h"

using namespace minitorch;
using namespace minitorch::test;
namespace ag = minitorch::autograd;

namespace {
/// Releases every parameter of `m` (checking that `param` memory drops by exactly its bytes) and
/// returns copies of their values, tagged `other`.
std::vector<Tensor> release_all(nn::Module& m) {
  std::vector<Tensor> saved;
  for (Tensor& p : m.parameters()) {
    saved.push_back(p.clone());
    const std::int64_t before = memory_stats().current(MemTag::param);
    p.release_data();
    EXPECT_EQ(memory_stats().current(MemTag::param), before - static_cast<std::int64_t>(p.nbytes())) << p.name();
  }
  return saved;
}

/// Gives every parameter new `param` storage with the saved values (param memory rises by its bytes).
void rematerialise(nn::Module& m, const std::vector<Tensor>& saved) {
  std::size_t k = 0;
  for (Tensor& p : m.parameters()) {
    const TensorImpl* impl = p.impl_ptr().get();
    const std::int64_t before = memory_stats().current(MemTag::param);
    {
      TagScope scope(MemTag::param);
      p.set_data(saved[k++].clone());
    }
    EXPECT_EQ(memory_stats().current(MemTag::param), before + static_cast<std::int64_t>(p.nbytes())) << p.name();
    EXPECT_EQ(p.impl_ptr().get(), impl);
  }
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no exception)";
}

/// loss = Σ module(x) ⊙ r, then backward; returns every parameter's gradient and x's.
/// `between` runs after forward, before backward.
std::vector<std::vector<float>> grads_of(const nn::Module& m, const Tensor& x, const Tensor& r,
                                         const std::function<Tensor(const Tensor&)>& forward,
                                         const std::function<void()>& between) {
  Tensor loss = ag::sum(ag::mul(forward(x), r));
  between();
  ag::backward(loss);
  std::vector<std::vector<float>> out{x.grad().to_vector()};
  for (auto& p : m.parameters()) out.push_back(p.grad().to_vector());
  return out;
}
}  // namespace

TEST(L03_ReleaseParams, LinearReleasedAfterForwardRematerialisedBeforeBackward) {
  Generator g1(51), g2(51), data(52);
  nn::Linear ref(6, 5, true, g1), fc(6, 5, true, g2);
  Tensor x = Tensor::randn({3, 4, 6}, data), r = Tensor::randn({3, 4, 5}, data);
  Tensor x1 = x.clone().set_requires_grad(), x2 = x.clone().set_requires_grad();
  auto want = grads_of(ref, x1, r, [&](const Tensor& t) { return ref.forward(t); }, [] {});
  const std::int64_t full = memory_stats().current(MemTag::param);
  auto got = grads_of(fc, x2, r, [&](const Tensor& t) { return fc.forward(t); }, [&] {
    auto saved = release_all(fc);
    EXPECT_EQ(memory_stats().current(MemTag::param), full - (5 * 6 + 5) * 4) << "the graph pins no parameter";
    rematerialise(fc, saved);
  });
  EXPECT_EQ(got, want);
}

TEST(L03_ReleaseParams, BlockReleasedAfterForwardRematerialisedBeforeBackward) {
  Generator g1(53), g2(53), data(54);
  nn::GPT ref_model(baby_config(), g1), model(baby_config(), g2);
  nn::Block& ref = *ref_model.blocks[0];
  nn::Block& block = *model.blocks[0];
  Tensor x = Tensor::randn({2, 8, 128}, data), r = Tensor::randn({2, 8, 128}, data);
  Tensor x1 = x.clone().set_requires_grad(), x2 = x.clone().set_requires_grad();
  auto want = grads_of(ref, x1, r, [&](const Tensor& t) { return ref.forward(t); }, [] {});
  std::int64_t block_bytes = 0;
  for (auto& p : block.parameters()) block_bytes += static_cast<std::int64_t>(p.nbytes());
  EXPECT_EQ(block_bytes, (12 * 128 * 128 + 13 * 128) * 4);
  const std::int64_t full = memory_stats().current(MemTag::param);
  auto got = grads_of(block, x2, r, [&](const Tensor& t) { return block.forward(t); }, [&] {
    auto saved = release_all(block);
    EXPECT_EQ(memory_stats().current(MemTag::param), full - block_bytes);
    rematerialise(block, saved);
    EXPECT_EQ(memory_stats().current(MemTag::param), full);
  });
  EXPECT_EQ(got, want);
}

TEST(L03_ReleaseParams, BackwardWhileReleasedNamesTheParameter) {
  Generator gen(55);
  nn::GPT model(tiny_config(), gen);
  nn::Block& block = *model.blocks[0];
  Tensor x = Tensor::randn({2, 4, 8}, gen);
  Tensor loss = ag::sum(block.forward(x));
  block.attn->c_attn->weight.release_data();
  EXPECT_EQ(error_of([&] { ag::backward(loss); }),
            "parameter 'transformer.h.0.attn.c_attn.weight' is released; gather it before use");

  nn::Linear fc(4, 3, true, gen);
  Tensor y = ag::sum(fc.forward(Tensor::randn({2, 4}, gen).set_requires_grad()));
  fc.weight.release_data();
  EXPECT_EQ(error_of([&] { ag::backward(y); }), "parameter 'weight' is released; gather it before use");
}

TEST(L03_ReleaseParams, ForwardWhileReleasedNamesTheParameter) {
  Generator gen(56);
  nn::GPT model(tiny_config(), gen);
  model.blocks[0]->ln_2->bias.release_data();
  Tensor idx = random_tokens(1, 4, 5, gen);
  EXPECT_EQ(error_of([&] { model.forward(idx); }), "parameter 'transformer.h.0.ln_2.bias' is released; gather it before use");
}
