#include "nn/attention.h"

#include <cmath>
#include <stdexcept>

#include "autograd/functions.h"

namespace minitorch::nn {

namespace ag = minitorch::autograd;

CausalSelfAttention::CausalSelfAttention(const GPTConfig& config, Generator& gen)
    : n_head_(config.n_head), n_embd_(config.n_embd) {
  if (config.n_head <= 0 || config.n_embd % config.n_head != 0)
    throw std::invalid_argument("CausalSelfAttention: n_embd (" + std::to_string(config.n_embd) +
                                ") must be divisible by n_head (" + std::to_string(config.n_head) + ")");
  const std::int64_t C = config.n_embd;
  const float proj_std = kInitStd / std::sqrt(2.f * static_cast<float>(config.n_layer));
  c_attn = register_module("c_attn", std::make_shared<Linear>(C, 3 * C, config.bias, gen));
  c_proj = register_module("c_proj", std::make_shared<Linear>(C, C, config.bias, gen, proj_std));
}

// x: (B, T, C) -> (B, T, C)
Tensor CausalSelfAttention::forward(const Tensor& x) const { return call({x}, [&] { return attend(x); }); }

// x: (B, T, C) -> (B, T, C)
Tensor CausalSelfAttention::attend(const Tensor& x) const {
  if (x.dim() != 3 || x.size(2) != n_embd_)
    throw std::invalid_argument("CausalSelfAttention: expected x of shape (B, T, " + std::to_string(n_embd_) +
                                "), got " + shape_str(x.shape()));
  return c_proj->forward(causal_attention(c_attn->forward(x), n_head_));  // (B, T, 3C) -> (B, T, C) -> (B, T, C)
}

// qkv: (B, T, 3·H·hs) -> (B, T, H·hs)
Tensor causal_attention(const Tensor& qkv_in, std::int64_t H) {
  const std::int64_t B = qkv_in.size(0), T = qkv_in.size(1), C = qkv_in.size(2) / 3, hs = C / H;
  Tensor qkv = ag::reshape(qkv_in, {B, T, 3 * H, hs});  // (B, T, 3H, hs), a free view: heads of q, k, v
  // q, k or v: narrow to its H heads (B, T, H, hs), then heads first: (B, H, T, hs), contiguous.
  auto heads = [&](std::int64_t part) {
    Tensor t = ag::narrow(qkv, 2, part * H, H);
    return ag::contiguous(ag::permute(t, {0, 2, 1, 3}));
  };
  Tensor q = heads(0), k = heads(1), v = heads(2);
  Tensor att = ag::matmul(q, k, false, true);                                   // (B, H, T, T) = q k^T
  att = ag::causal_softmax(att, 1.f / std::sqrt(static_cast<float>(hs)));      // (B, H, T, T), 0 for j > i
  Tensor y = ag::matmul(att, v);                                                // (B, H, T, hs)
  y = ag::contiguous(ag::permute(y, {0, 2, 1, 3}));                             // (B, T, H, hs)
  return ag::reshape(y, {B, T, C});                                             // (B, T, C)
}

}  // namespace minitorch::nn
