// The tensor-parallel GPT (tp/gpt.h): the full model's values sliced per rank, and its forward.
#include "tp/gpt.h"

#include <stdexcept>
#include <string>

#include "autograd/functions.h"
#include "minitorch/allocator.h"
#include "nn/attention.h"
#include "tp/cross_entropy.h"
#include "tp/memory.h"
#include "tp/regions.h"

namespace minitorch::tp {

namespace ag = autograd;

namespace {
/// A copy of a replicated LayerNorm (the same on every rank).
std::shared_ptr<nn::LayerNorm> copy_of(const nn::LayerNorm& full) {
  auto ln = std::make_shared<nn::LayerNorm>(full.weight.size(0), full.bias.defined(), full.eps);
  ln->weight.detach().copy_(full.weight);
  if (full.bias.defined()) ln->bias.detach().copy_(full.bias);
  return ln;
}
}  // namespace

ParallelAttention::ParallelAttention(const nn::CausalSelfAttention& full, dist::ProcessGroup& group)
    : local_heads(full.n_head() / group.size()) {
  c_attn = register_module("c_attn", std::make_shared<ColumnParallelLinear>(full.c_attn->weight, full.c_attn->bias,
                                                                             group, /*stacked=*/3));
  c_proj = register_module("c_proj", std::make_shared<RowParallelLinear>(full.c_proj->weight, full.c_proj->bias, group));
}

// x: (B, T, C) -> (B, T, C)
Tensor ParallelAttention::forward(const Tensor& x) const {
  // (B, T, 3C/t) = this rank's heads' [q | k | v] -> (B, T, C/t) -> (B, T, C), summed over the group
  return call({x}, [&] { return c_proj->forward(nn::causal_attention(c_attn->forward(x), local_heads)); });
}

ParallelMLP::ParallelMLP(const nn::MLP& full, dist::ProcessGroup& group) {
  c_fc = register_module("c_fc", std::make_shared<ColumnParallelLinear>(full.c_fc->weight, full.c_fc->bias, group));
  c_proj = register_module("c_proj", std::make_shared<RowParallelLinear>(full.c_proj->weight, full.c_proj->bias, group));
}

// x: (B, T, C) -> (B, T, 4C/t) -> (B, T, C)
Tensor ParallelMLP::forward(const Tensor& x) const {
  return call({x}, [&] { return c_proj->forward(ag::gelu(c_fc->forward(x))); });
}

ParallelBlock::ParallelBlock(const nn::Block& full, dist::ProcessGroup& group) {
  ln_1 = register_module("ln_1", copy_of(*full.ln_1));
  attn = register_module("attn", std::make_shared<ParallelAttention>(*full.attn, group));
  ln_2 = register_module("ln_2", copy_of(*full.ln_2));
  mlp = register_module("mlp", std::make_shared<ParallelMLP>(*full.mlp, group));
}

// x: (B, T, C) -> (B, T, C)
Tensor ParallelBlock::forward(const Tensor& x) const {
  return call({x}, [&] {
    Tensor h = ag::add(x, attn->forward(ln_1->forward(x)));
    return ag::add(h, mlp->forward(ln_2->forward(h)));
  });
}

TensorParallelGPT::TensorParallelGPT(const nn::GPT& full, dist::ProcessGroup& group)
    : config_(full.config()), group_(&group) {
  check_head_split(config_, group.size());
  TagScope scope(MemTag::param);
  transformer = register_module("transformer", std::make_shared<nn::Module>());
  wte = transformer->register_module("wte", std::make_shared<VocabParallelEmbedding>(full.wte->weight, group));
  wpe = transformer->register_module("wpe", std::make_shared<nn::Embedding>(full.wpe->weight.detach().clone()));
  auto h = transformer->register_module("h", std::make_shared<nn::Module>());
  for (std::size_t i = 0; i < full.blocks.size(); ++i)
    blocks.push_back(h->register_module(std::to_string(i), std::make_shared<ParallelBlock>(*full.blocks[i], group)));
  ln_f = transformer->register_module("ln_f", copy_of(*full.ln_f));
  lm_head = register_module("lm_head", std::make_shared<nn::Module>());
  lm_head->register_parameter("weight", wte->weight);  // tied: one tensor, two names (as nanoGPT)
}

// idx: (B, T) -> (B, T, Vp/t)
Tensor TensorParallelGPT::forward(const Tensor& idx) const {
  return call({idx}, [&] {
    const std::int64_t T = idx.size(1);
    if (T > config_.block_size)
      throw std::invalid_argument("TensorParallelGPT: a sequence of " + std::to_string(T) + " tokens, block size " +
                                  std::to_string(config_.block_size));
    Tensor x = ag::add(wte->forward(idx), wpe->forward(Tensor::arange(T)));  // (B, T, C)
    for (const auto& block : blocks) x = block->forward(x);
    // lm_head, tied to wte's slice, is a column-parallel product: f, then (B, T, C) x (Vp/t, C)^T
    return ag::matmul(f(ln_f->forward(x), *group_), wte->weight, false, true);
  });
}

// idx, targets: (B, T) -> scalar
Tensor TensorParallelGPT::loss(const Tensor& idx, const Tensor& targets, std::int32_t ignore_index) const {
  const Tensor logits = forward(idx);  // (B, T, Vp/t)
  const std::int64_t BT = logits.size(0) * logits.size(1);
  return vocab_parallel_cross_entropy(ag::reshape(logits, {BT, logits.size(2)}), targets.reshape({BT}), wte->slice,
                                      wte->vocab_size, *group_, ignore_index);
}

}  // namespace minitorch::tp
