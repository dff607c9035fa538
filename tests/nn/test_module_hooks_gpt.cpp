// L03 Module hooks on the GPT: the exact order for its blocks (pre-forward 0, 1, 2; pre-backward
// 2, 1, 0; post-backward once the block's gradients are final), and ZeRO-3's use of them —
// gather a block's parameters in pre-forward / pre-backward, release them in post-forward /
// post-backward — giving bit-identical gradients with at most one block gathered at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "nn/gpt.h"
#include "nn/gpt_test_util.h"

using namespace minitorch;
using namespace minitorch::test;
using Log = std::vector<std::string>;

namespace {
nn::GPTConfig three_blocks() {
  nn::GPTConfig c = tiny_config();
  c.n_layer = 3;
  return c;
}

bool all_grads(const nn::Module& m, bool defined) {
  for (auto& [n, p] : m.named_parameters())
    if (p.grad().defined() != defined) return false;
  return true;
}
}  // namespace

TEST(L03_ModuleHooksGPT, BlocksForwardInOrderBackwardInReverse) {
  Generator gen(31);
  nn::GPT model(three_blocks(), gen);
  Generator data(32);
  Tensor idx = random_tokens(2, 4, 5, data), tgt = random_tokens(2, 4, 5, data);
  Log log;
  std::vector<HookHandle> h;
  std::vector<nn::Module*> hooked{&model, model.wte.get(), model.wpe.get()};
  for (auto& b : model.blocks) hooked.push_back(b.get());
  hooked.push_back(model.ln_f.get());
  hooked.push_back(model.lm_head.get());
  for (nn::Module* m : hooked) {
    const std::string n = m->path().empty() ? "gpt" : m->path();
    h.push_back(m->register_pre_forward_hook([&log, n](nn::Module&, std::span<const Tensor>) { log.push_back("pre_fwd " + n); }));
    h.push_back(m->register_post_forward_hook(
        [&log, n](nn::Module&, std::span<const Tensor>, const Tensor&) { log.push_back("post_fwd " + n); }));
    h.push_back(m->register_pre_backward_hook([&log, n](nn::Module&, const Tensor&) { log.push_back("pre_bwd " + n); }));
  }
  for (std::size_t i = 0; i < model.blocks.size(); ++i)
    h.push_back(model.blocks[i]->register_post_backward_hook([&, i](nn::Module& m) {
      log.push_back("post_bwd " + m.path());
      EXPECT_TRUE(all_grads(m, true)) << "block " << i << ": every gradient is final";
      if (i > 0) {
        EXPECT_TRUE(all_grads(*model.blocks[i - 1], false)) << "block " << i - 1 << " not started yet";
      }
    }));
  for (nn::Module* m : {static_cast<nn::Module*>(&model), static_cast<nn::Module*>(model.wte.get()),
                        static_cast<nn::Module*>(model.wpe.get()), static_cast<nn::Module*>(model.ln_f.get()),
                        static_cast<nn::Module*>(model.lm_head.get())})
    h.push_back(m->register_post_backward_hook(
        [&log](nn::Module& mm) { log.push_back("post_bwd " + (mm.path().empty() ? "gpt" : mm.path())); }));

  const Log forward = {"pre_fwd gpt",
                       "pre_fwd transformer.wte",  "post_fwd transformer.wte",
                       "pre_fwd transformer.wpe",  "post_fwd transformer.wpe",
                       "pre_fwd transformer.h.0",  "post_fwd transformer.h.0",
                       "pre_fwd transformer.h.1",  "post_fwd transformer.h.1",
                       "pre_fwd transformer.h.2",  "post_fwd transformer.h.2",
                       "pre_fwd transformer.ln_f", "post_fwd transformer.ln_f",
                       "pre_fwd lm_head",          "post_fwd lm_head",
                       "post_fwd gpt"};
  // lm_head's weight is wte's (tied): it is final only after the embedding's backward, so lm_head's
  // post-backward comes at the end, and the GPT's after all of its children.
  const Log backward = {"pre_bwd gpt",
                        "pre_bwd lm_head",
                        "pre_bwd transformer.ln_f", "post_bwd transformer.ln_f",
                        "pre_bwd transformer.h.2",  "post_bwd transformer.h.2",
                        "pre_bwd transformer.h.1",  "post_bwd transformer.h.1",
                        "pre_bwd transformer.h.0",  "post_bwd transformer.h.0",
                        "pre_bwd transformer.wpe",  "post_bwd transformer.wpe",
                        "pre_bwd transformer.wte",
                        "post_bwd lm_head", "post_bwd transformer.wte", "post_bwd gpt"};
  for (int step = 0; step < 2; ++step) {
    model.zero_grad();
    log.clear();
    Tensor loss = model.loss(idx, tgt);
    EXPECT_EQ(log, forward) << "step " << step;
    log.clear();
    autograd::backward(loss);
    EXPECT_EQ(log, backward) << "step " << step;
  }
}

namespace {
/// What ZeRO-3 will do with a block, on one rank: keep a copy of its parameters aside (the shard;
/// here the whole of it), gather = give the parameters fresh `param` storage with those values,
/// release = drop it.
struct Zero3Unit {
  std::vector<Tensor> params, stash;
  int* gathered;  // blocks gathered right now
  int* max_gathered;
  void gather() {
    if (!params[0].is_released()) return;
    TagScope scope(MemTag::param);
    for (std::size_t k = 0; k < params.size(); ++k) params[k].set_data(stash[k].clone());
    *max_gathered = std::max(*max_gathered, ++*gathered);
  }
  void release() {
    if (params[0].is_released()) return;
    for (Tensor& p : params) p.release_data();
    --*gathered;
  }
};
}  // namespace

TEST(L03_ModuleHooksGPT, Zero3StyleGatherAndReleaseGiveIdenticalGradients) {
  Generator g1(41), g2(41);
  nn::GPT plain(three_blocks(), g1), sharded(three_blocks(), g2);
  Generator data(42);
  Tensor idx = random_tokens(2, 4, 5, data), tgt = random_tokens(2, 4, 5, data);

  const std::int64_t full = memory_stats().current(MemTag::param);
  std::int64_t block_bytes = 0;
  int gathered = 0, max_gathered = 0;
  std::vector<std::shared_ptr<Zero3Unit>> units;
  std::vector<HookHandle> h;
  for (auto& block : sharded.blocks) {
    auto u = std::make_shared<Zero3Unit>();
    u->gathered = &gathered, u->max_gathered = &max_gathered;
    for (Tensor& p : block->parameters()) {
      u->params.push_back(p);
      u->stash.push_back(p.clone());  // tagged `other`: the bytes this rank keeps
      block_bytes += static_cast<std::int64_t>(p.nbytes());
    }
    ++gathered;
    u->release();
    h.push_back(block->register_pre_forward_hook([u](nn::Module&, std::span<const Tensor>) { u->gather(); }));
    h.push_back(block->register_post_forward_hook([u](nn::Module&, std::span<const Tensor>, const Tensor&) { u->release(); }));
    h.push_back(block->register_pre_backward_hook([u](nn::Module&, const Tensor&) { u->gather(); }));
    h.push_back(block->register_post_backward_hook([u](nn::Module&) { u->release(); }));
    units.push_back(u);
  }
  const std::int64_t released = memory_stats().current(MemTag::param);
  EXPECT_EQ(released, full - block_bytes) << "every block parameter's bytes are gone";

  for (int step = 0; step < 2; ++step) {
    plain.zero_grad(), sharded.zero_grad();
    Tensor a = plain.loss(idx, tgt), b = sharded.loss(idx, tgt);
    EXPECT_EQ(memory_stats().current(MemTag::param), released) << "the graph pins no released parameter";
    EXPECT_EQ(a.item(), b.item());
    autograd::backward(a);
    autograd::backward(b);
    EXPECT_EQ(gathered, 0);
    EXPECT_EQ(max_gathered, 1) << "one block at a time, in forward and in backward";
    EXPECT_EQ(memory_stats().current(MemTag::param), released);
    auto pa = plain.named_parameters(), pb = sharded.named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i)
      EXPECT_EQ(pa[i].second.grad().to_vector(), pb[i].second.grad().to_vector()) << pa[i].first;
  }
}
