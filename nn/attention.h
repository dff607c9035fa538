#pragma once
/// \file attention.h
/// Causal multi-head self-attention, nanoGPT's CausalSelfAttention.
///
/// Parameters: `c_attn` (3C, C) + (3C) projects x to q, k, v in one matmul; `c_proj` (C, C) + (C)
/// mixes the heads back. c_proj is a residual projection: its weight starts at N(0, 0.02/√(2L)).
///
/// \code
///   using namespace minitorch;
///   Generator gen(1337);
///   auto cfg = nn::GPTConfig::named("baby");              // C=128, H=4
///   nn::CausalSelfAttention attn(cfg, gen);
///   Tensor x = Tensor::randn({2, 16, 128}, gen);          // (B, T, C)
///   Tensor y = attn.forward(x);                           // (2, 16, 128); y[:, t] sees x[:, :t+1]
/// \endcode
#include <memory>

#include "minitorch/random.h"
#include "nn/gpt_config.h"
#include "nn/layers.h"

namespace minitorch::nn {

class CausalSelfAttention : public Module {
 public:
  /// c_attn.weight ~ N(0, 0.02), c_proj.weight ~ N(0, 0.02/√(2·n_layer)), biases 0, drawn in that order.
  CausalSelfAttention(const GPTConfig& config, Generator& gen);

  /// x: (B, T, C) -> (B, T, C). Position t attends to positions 0..t only.
  Tensor forward(const Tensor& x) const;

  std::int64_t n_head() const { return n_head_; }

  std::shared_ptr<Linear> c_attn;  // (3C, C): x -> [q | k | v]
  std::shared_ptr<Linear> c_proj;  // (C, C): heads -> output

 private:
  Tensor attend(const Tensor& x) const;  // the body of forward()

  std::int64_t n_head_;
  std::int64_t n_embd_;
};

/// The attention itself, between the two projections: qkv (B, T, 3·H·hs) = [q | k | v] along the last dim, H
/// heads of hs each -> (B, T, H·hs), the heads side by side. Shared by CausalSelfAttention and the
/// tensor-parallel attention (tp/gpt.h), which runs it on its H/t heads.
Tensor causal_attention(const Tensor& qkv, std::int64_t n_head);

}  // namespace minitorch::nn
