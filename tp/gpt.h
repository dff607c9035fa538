#pragma once
/// \file gpt.h
/// The GPT split over a tensor group of t ranks (Megatron's layout, docs/design.md §14), built from a full
/// nn::GPT that every rank drew from the same seed: each rank keeps its slices and computes the same
/// function, so t ranks train exactly as one does.
///
///   transformer.wte           VocabParallelEmbedding   (Vp/t, C)   Vp = V padded to 128·t (t > 1)
///   transformer.wpe           replicated               (block_size, C)
///   transformer.h.i.ln_1/ln_2 replicated               (C)
///   transformer.h.i.attn      c_attn column (3C/t, C), its H/t heads' [q | k | v]; c_proj row (C, C/t)
///   transformer.h.i.mlp       c_fc column (4C/t, C);   c_proj row (C, 4C/t)
///   transformer.ln_f          replicated               (C)
///   lm_head                   tied to wte's slice: logits (B·T, Vp/t), a column-parallel product
///
/// A replicated parameter gets the same gradient on every rank of the group (what it reads is whole there),
/// a split one its own slice's; names are nanoGPT's, shapes per rank. Communication per micro-batch: the
/// embedding's all-reduce of (B, T, C), two per block forward (the two g's) and two backward (the f's),
/// f on ln_f's output backward, and the loss's three all-reduces of B·T floats.
#include <cstdint>
#include <memory>
#include <vector>

#include "dist/process_group.h"
#include "nn/gpt.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "tp/layers.h"

namespace minitorch::tp {

/// Attention on this rank's H/t heads: c_attn (column, stacked [q | k | v]) → attention → c_proj (row).
class ParallelAttention : public nn::Module {
 public:
  ParallelAttention(const nn::CausalSelfAttention& full, dist::ProcessGroup& group);
  /// x: (B, T, C) whole -> (B, T, C) whole
  Tensor forward(const Tensor& x) const;
  std::shared_ptr<ColumnParallelLinear> c_attn;  // (3C/t, C)
  std::shared_ptr<RowParallelLinear> c_proj;     // (C, C/t)
  std::int64_t local_heads;
};

/// c_fc (column) → GELU → c_proj (row).
class ParallelMLP : public nn::Module {
 public:
  ParallelMLP(const nn::MLP& full, dist::ProcessGroup& group);
  /// x: (B, T, C) whole -> (B, T, C) whole
  Tensor forward(const Tensor& x) const;
  std::shared_ptr<ColumnParallelLinear> c_fc;  // (4C/t, C)
  std::shared_ptr<RowParallelLinear> c_proj;   // (C, 4C/t)
};

class ParallelBlock : public nn::Module {
 public:
  ParallelBlock(const nn::Block& full, dist::ProcessGroup& group);
  /// x: (B, T, C) -> (B, T, C): x + attn(ln_1(x)), then + mlp(ln_2(·)), as nn::Block
  Tensor forward(const Tensor& x) const;
  std::shared_ptr<nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<ParallelAttention> attn;
  std::shared_ptr<ParallelMLP> mlp;
};

class TensorParallelGPT : public nn::Module {
 public:
  /// Takes `full`'s values (not its tensors: `full` can be dropped afterwards). Throws one clear error unless
  /// group.size() divides n_head (and so n_embd and 4·n_embd).
  TensorParallelGPT(const nn::GPT& full, dist::ProcessGroup& group);
  /// Mean next-token cross-entropy, the same on every rank.   idx, targets: (B, T) i32 -> scalar
  Tensor loss(const Tensor& idx, const Tensor& targets, std::int32_t ignore_index = -1) const;
  /// This rank's logits.   idx: (B, T) i32 -> (B, T, Vp/t); columns wte->slice.start .., the first slice.valid real
  Tensor forward(const Tensor& idx) const;

  const nn::GPTConfig& config() const { return config_; }
  dist::ProcessGroup& group() const { return *group_; }

  std::shared_ptr<nn::Module> transformer;
  std::shared_ptr<VocabParallelEmbedding> wte;
  std::shared_ptr<nn::Embedding> wpe;
  std::vector<std::shared_ptr<ParallelBlock>> blocks;
  std::shared_ptr<nn::LayerNorm> ln_f;
  std::shared_ptr<nn::Module> lm_head;  // holds "weight", the same tensor as wte->weight

 private:
  nn::GPTConfig config_;
  dist::ProcessGroup* group_;
};

}  // namespace minitorch::tp
