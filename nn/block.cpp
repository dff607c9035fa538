#include "nn/block.h"

#include <cmath>

#include "autograd/functions.h"

namespace minitorch::nn {

namespace ag = minitorch::autograd;

MLP::MLP(const GPTConfig& config, Generator& gen) {
  const std::int64_t C = config.n_embd;
  const float proj_std = kInitStd / std::sqrt(2.f * static_cast<float>(config.n_layer));
  c_fc = register_module("c_fc", std::make_shared<Linear>(C, 4 * C, config.bias, gen));
  c_proj = register_module("c_proj", std::make_shared<Linear>(4 * C, C, config.bias, gen, proj_std));
}

// x: (B, T, C) -> (B, T, 4C) -> gelu -> (B, T, C)
Tensor MLP::forward(const Tensor& x) const {
  return call({x}, [&] { return c_proj->forward(ag::gelu(c_fc->forward(x))); });
}

Block::Block(const GPTConfig& config, Generator& gen) {
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(config.n_embd, config.bias));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(config, gen));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(config.n_embd, config.bias));
  mlp = register_module("mlp", std::make_shared<MLP>(config, gen));
}

// x: (B, T, C) -> (B, T, C)
Tensor Block::forward(const Tensor& x) const {
  return call({x}, [&] {
    Tensor h = ag::add(x, attn->forward(ln_1->forward(x)));  // (B, T, C)
    return ag::add(h, mlp->forward(ln_2->forward(h)));       // (B, T, C)
  });
}

}  // namespace minitorch::nn
