// Per-module phases in the event sink: a forward span for every module call (Module::call) and, with
// ModulePhaseEvents, a backward span per module — blocks in reverse order, each closed when its
// parameters' gradients are final.
#include <gtest/gtest.h>

#include <algorithm>

#include "autograd/engine.h"
#include "gpt_test_util.h"
#include "minitorch/events.h"
#include "nn/phase_events.h"

using namespace minitorch;

TEST(L03_PhaseEvents, ForwardSpansPerModuleAndBackwardSpansInReverse) {
  Generator gen(3);
  nn::GPTConfig cfg = test::tiny_config();
  cfg.n_layer = 3;
  nn::GPT model(cfg, gen);
  Tensor x = test::random_tokens(2, cfg.block_size, cfg.vocab_size, gen);
  events::Recorder rec;
  {
    events::Attach listen(rec);
    nn::ModulePhaseEvents phases(model);
    autograd::backward(model.loss(x, x));
  }
  std::vector<std::string> fwd_blocks, bwd_begin, bwd_end;
  int forward_begins = 0, forward_ends = 0;
  for (const auto& e : rec.events()) {
    if (e.category != events::Category::compute) continue;
    const bool block = e.scope.rfind("transformer.h.", 0) == 0 && e.scope.find('.', 14) == std::string::npos;
    if (e.name == "forward") {
      (e.kind == events::Kind::begin ? forward_begins : forward_ends)++;
      if (block && e.kind == events::Kind::begin) fwd_blocks.push_back(e.scope);
    }
    if (e.name == "backward" && block) (e.kind == events::Kind::begin ? bwd_begin : bwd_end).push_back(e.scope);
  }
  EXPECT_EQ(forward_begins, forward_ends);
  EXPECT_GT(forward_begins, 3 * 5) << "every module call (blocks, their layers, embeddings, head)";
  const std::vector<std::string> up{"transformer.h.0", "transformer.h.1", "transformer.h.2"};
  const std::vector<std::string> down{"transformer.h.2", "transformer.h.1", "transformer.h.0"};
  EXPECT_EQ(fwd_blocks, up);
  EXPECT_EQ(bwd_begin, down);
  EXPECT_EQ(bwd_end, down);
}

TEST(L03_PhaseEvents, WithoutASinkTheHooksChangeNoGradient) {
  Generator gen(3);
  nn::GPTConfig cfg = test::tiny_config();
  cfg.n_layer = 2;
  nn::GPT model(cfg, gen);
  Tensor x = test::random_tokens(2, cfg.block_size, cfg.vocab_size, gen);
  auto grads = [&] {
    model.zero_grad();
    autograd::backward(model.loss(x, x));
    std::vector<float> all;
    for (auto& [name, p] : model.named_parameters()) {
      auto v = p.grad().to_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  const std::vector<float> plain = grads();
  std::vector<float> hooked;
  {
    nn::ModulePhaseEvents phases(model);  // hooks installed, nobody listening
    hooked = grads();
  }
  EXPECT_EQ(hooked, plain);
  EXPECT_EQ(grads(), plain) << "after the hooks are gone";
}
