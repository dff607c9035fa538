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
    : nn::GPT(full.config()), group_(&group) {
  check_head_split(config(), group.size());
  TagScope scope(MemTag::param);
  transformer = register_module("transformer", std::make_shared<nn::Module>());
  parallel_wte = transformer->register_module("wte", std::make_shared<VocabParallelEmbedding>(full.wte->weight, group));
  wpe = transformer->register_module("wpe", std::make_shared<nn::Embedding>(full.wpe->weight.detach().clone()));
  auto h = transformer->register_module("h", std::make_shared<nn::Module>());
  for (std::size_t i = 0; i < full.blocks.size(); ++i)
    parallel_blocks.push_back(
        h->register_module(std::to_string(i), std::make_shared<ParallelBlock>(*full.blocks[i], group)));
  ln_f = transformer->register_module("ln_f", copy_of(*full.ln_f));
  lm_head = register_module("lm_head", std::make_shared<nn::Linear>(parallel_wte->weight));  // tied, as nanoGPT
}

TensorParallelGPT::TensorParallelGPT(const nn::GPT& full, std::shared_ptr<dist::ProcessGroup> group)
    : TensorParallelGPT(full, *group) {
  owned_group_ = std::move(group);
}

// idx: (B, T) -> (B, T, C)
Tensor TensorParallelGPT::embed(const Tensor& idx) const {
  if (idx.dim() != 2 || idx.size(1) > config().block_size)
    throw std::invalid_argument("TensorParallelGPT: idx must be (B, T) with T <= block size " +
                                std::to_string(config().block_size) + ", got " + idx.describe());
  Tensor positions;
  {
    TransferScope io(TransferPurpose::io);  // on a device, 0..T-1 go up with the tokens: the run's input
    positions = Tensor::arange(idx.size(1)).to(idx.device());
  }
  return ag::add(parallel_wte->forward(idx), wpe->forward(positions));  // (B, T, C)
}

// x: (B, T, C) -> (B, T, C)
Tensor TensorParallelGPT::run_block(std::int64_t i, const Tensor& x) const {
  return parallel_blocks[static_cast<std::size_t>(i)]->forward(x);
}

// x: (B, T, C) -> (B, T, Vp/t)
Tensor TensorParallelGPT::head(const Tensor& x) const {
  // lm_head, tied to wte's slice, is a column-parallel product: f, then (B, T, C) x (Vp/t, C)^T
  return ag::matmul(f(ln_f->forward(x), *group_), parallel_wte->weight, false, true);
}

// logits: (B, T, Vp/t), targets: (B, T) -> scalar
Tensor TensorParallelGPT::loss_of_logits(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index) const {
  const std::int64_t BT = logits.size(0) * logits.size(1);
  return vocab_parallel_cross_entropy(ag::reshape(logits, {BT, logits.size(2)}), targets.reshape({BT}),
                                      parallel_wte->slice, parallel_wte->vocab_size, *group_, ignore_index);
}

bool TensorParallelGPT::is_split(const std::string& name) const {
  // Split: the vocabulary (wte, tied lm_head), the column-parallel weights and biases, the row-parallel weights.
  // Replicated: wpe, the LayerNorms, the row-parallel biases (added once, after g's sum).
  auto ends_with = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return name == "transformer.wte.weight" || name == "lm_head.weight" || name.find(".c_attn.") != std::string::npos ||
         name.find(".c_fc.") != std::string::npos || ends_with(".c_proj.weight");
}

std::vector<std::string> TensorParallelGPT::norm_excluded() const {
  std::vector<std::string> out;
  if (group_->rank() == 0) return out;
  for (const auto& [name, p] : named_parameters())
    if (!is_split(name)) out.push_back(name);
  return out;
}

}  // namespace minitorch::tp
