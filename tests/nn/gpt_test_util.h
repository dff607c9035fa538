#pragma once
// Shared helpers for the L03 GPT tests.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "minitorch/random.h"
#include "nn/gpt.h"

namespace minitorch::test {
inline nn::GPTConfig tiny_config(bool bias = true) {
  nn::GPTConfig c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 8, c.block_size = 4, c.vocab_size = 5, c.bias = bias;
  return c;
}

inline nn::GPTConfig baby_config(std::int64_t vocab = 65) {
  auto c = nn::GPTConfig::named("baby");
  c.vocab_size = vocab;
  return c;
}

inline Tensor random_tokens(std::int64_t B, std::int64_t T, std::int64_t V, Generator& gen) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(B * T));
  for (auto& i : ids) i = static_cast<std::int32_t>(gen.next_below(static_cast<std::uint64_t>(V)));
  return Tensor::from_ints(ids, {B, T});
}

/// nanoGPT's state_dict keys and shapes, written out from its model.py (GPT.__init__, Block,
/// CausalSelfAttention, MLP), in its order. lm_head.weight is last and is the tied duplicate.
inline std::vector<std::pair<std::string, Shape>> nanogpt_state_dict(const nn::GPTConfig& c) {
  const std::int64_t V = c.vocab_size, T = c.block_size, C = c.n_embd;
  std::vector<std::pair<std::string, Shape>> out{{"transformer.wte.weight", {V, C}}, {"transformer.wpe.weight", {T, C}}};
  auto add = [&](const std::string& n, Shape w, Shape b) {
    out.emplace_back(n + ".weight", w);
    if (c.bias) out.emplace_back(n + ".bias", b);
  };
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    add(h + "ln_1", {C}, {C});
    add(h + "attn.c_attn", {3 * C, C}, {3 * C});
    add(h + "attn.c_proj", {C, C}, {C});
    add(h + "ln_2", {C}, {C});
    add(h + "mlp.c_fc", {4 * C, C}, {4 * C});
    add(h + "mlp.c_proj", {C, 4 * C}, {C});
  }
  add("transformer.ln_f", {C}, {C});
  out.emplace_back("lm_head.weight", Shape{V, C});
  return out;
}

inline void expect_nanogpt_layout(const nn::GPT& model) {
  auto expected = nanogpt_state_dict(model.config());
  auto sd = model.state_dict();
  ASSERT_EQ(sd.size(), expected.size());
  for (std::size_t i = 0; i < sd.size(); ++i) {
    EXPECT_EQ(sd[i].first, expected[i].first) << "entry " << i;
    EXPECT_EQ(sd[i].second.shape(), expected[i].second) << sd[i].first;
  }
  auto named = model.named_parameters();
  ASSERT_EQ(named.size(), expected.size() - 1) << "lm_head.weight is tied: not a separate parameter";
  for (std::size_t i = 0; i < named.size(); ++i) {
    EXPECT_EQ(named[i].first, expected[i].first);
    EXPECT_EQ(named[i].second.name(), expected[i].first);
  }
}

inline double mean_of(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / static_cast<double>(v.size());
}
inline double std_of(const std::vector<float>& v) {
  double m = mean_of(v), s = 0;
  for (float x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}
}  // namespace minitorch::test
