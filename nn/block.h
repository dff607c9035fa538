#pragma once
/// \file block.h
/// The MLP and the transformer Block of nanoGPT (pre-LayerNorm, residual connections):
///
///     x = x + attn(ln_1(x))
///     x = x + mlp(ln_2(x))          mlp(x) = c_proj(gelu(c_fc(x)))
///
/// A Block is the unit that pipeline stages own and activation checkpointing wraps: it maps
/// (B, T, C) to (B, T, C) and reads nothing else.
///
/// \code
///   using namespace minitorch;
///   Generator gen(1337);
///   auto cfg = nn::GPTConfig::named("baby");
///   nn::Block block(cfg, gen);
///   Tensor x = Tensor::randn({2, 16, 128}, gen);    // (B, T, C)
///   Tensor y = block.forward(x);                    // (2, 16, 128)
/// \endcode
#include <memory>

#include "minitorch/random.h"
#include "nn/attention.h"
#include "nn/gpt_config.h"
#include "nn/layers.h"

namespace minitorch::nn {

/// Position-wise feed-forward: c_fc (4C, C), tanh-GELU, c_proj (C, 4C).
class MLP : public Module {
 public:
  /// c_fc.weight ~ N(0, 0.02), c_proj.weight ~ N(0, 0.02/√(2·n_layer)), biases 0, in that order.
  MLP(const GPTConfig& config, Generator& gen);

  /// x: (B, T, C) -> (B, T, C)   (any leading dims)
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<Linear> c_fc;    // (4C, C)
  std::shared_ptr<Linear> c_proj;  // (C, 4C)
};

/// One transformer block. Parameters, in order: ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc,
/// mlp.c_proj (weights drawn from `gen` in that order).
class Block : public Module {
 public:
  Block(const GPTConfig& config, Generator& gen);

  /// x: (B, T, C) -> (B, T, C)
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<LayerNorm> ln_1;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<LayerNorm> ln_2;
  std::shared_ptr<MLP> mlp;
};

}  // namespace minitorch::nn
