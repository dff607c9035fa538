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
#include <string>
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

/// An nn::GPT whose parts are split (the engines drive it as they drive the whole model: embed, run_block, head,
/// loss_of_logits are overridden). wpe, ln_f and the `transformer` container are the base's members; the split
/// token embedding and the parallel blocks are parallel_wte and parallel_blocks (the base's wte and blocks stay
/// empty); lm_head is an nn::Linear over parallel_wte's weight (tied: one tensor, two names).
class TensorParallelGPT : public nn::GPT {
 public:
  /// Takes `full`'s values (not its tensors: `full` can be dropped afterwards). Throws one clear error unless
  /// group.size() divides n_head (and so n_embd and 4·n_embd).
  TensorParallelGPT(const nn::GPT& full, dist::ProcessGroup& group);
  /// The same over a group the model keeps alive (a grid's tensor group, pipeline/make_trainer.h).
  TensorParallelGPT(const nn::GPT& full, std::shared_ptr<dist::ProcessGroup> group);

  /// Token embedding (each rank looks up its vocabulary slice; g sums) + positions.   idx: (B, T) i32 -> (B, T, C)
  Tensor embed(const Tensor& idx) const override;
  /// parallel_blocks[i].   x: (B, T, C) -> (B, T, C)
  Tensor run_block(std::int64_t i, const Tensor& x) const override;
  /// This rank's logits: ln_f, f, the product with the weight slice.   x: (B, T, C) -> (B, T, Vp/t), columns
  /// parallel_wte->slice.start .., the first slice.valid real
  Tensor head(const Tensor& x) const override;
  /// The vocabulary-parallel cross-entropy (tp/cross_entropy.h).   logits: (B, T, Vp/t), targets: (B, T) -> scalar,
  /// the same on every rank
  Tensor loss_of_logits(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index = -1) const override;

  dist::ProcessGroup& group() const { return *group_; }
  /// Whether parameter `name` is split over the group (its slices differ) or replicated (the same on every rank).
  bool is_split(const std::string& name) const;
  /// The parameters this rank leaves out of the global gradient norm: the replicated ones on every rank but tp
  /// rank 0, which counts them once for the group (Megatron's rule); none on rank 0.
  std::vector<std::string> norm_excluded() const;

  std::shared_ptr<VocabParallelEmbedding> parallel_wte;       // transformer.wte: (Vp/t, C)
  std::vector<std::shared_ptr<ParallelBlock>> parallel_blocks;  // transformer.h.i

 private:
  dist::ProcessGroup* group_;
  std::shared_ptr<dist::ProcessGroup> owned_group_;  ///< group_ when the model keeps it alive
};

}  // namespace minitorch::tp
