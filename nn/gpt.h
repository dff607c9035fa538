#pragma once
/// \file gpt.h
/// The GPT of nanoGPT (docs/design.md §4): token + position embeddings, L pre-LayerNorm blocks, a final
/// LayerNorm and an LM head tied to the token embedding.
///
/// \code
///   using namespace minitorch;
///   auto cfg = nn::GPTConfig::named("baby");
///   cfg.vocab_size = 65;
///   Generator gen(1337);                                  // same seed => same weights
///   nn::GPT model(cfg, gen);
///   Tensor idx = Tensor::from_ints(ids, {B, T});          // (B, T) i32, T <= block_size
///   Tensor tgt = Tensor::from_ints(next_ids, {B, T});
///   Tensor loss = model.loss(idx, tgt);                   // scalar; ≈ ln(65) = 4.17 at init
///   autograd::backward(loss);                             // fills every parameter's grad
///   // the same forward, piece by piece (what a pipeline stage or checkpointing runs):
///   Tensor x = model.embed(idx);                          // (B, T, C)
///   for (auto& block : model.blocks) x = block->forward(x);
///   Tensor logits = model.head(x);                        // (B, T, V)
///   // sampling
///   Generator sampler(42);
///   Tensor out = model.generate(idx, 100, /*temperature=*/0.8f, sampler, /*top_k=*/20);  // (B, T + 100)
/// \endcode
///
/// Parameter names and shapes are nanoGPT's (C = n_embd, V = vocab_size, T = block_size):
///
///     transformer.wte.weight              (V, C)     N(0, 0.02); also lm_head.weight (tied: one tensor)
///     transformer.wpe.weight              (T, C)     N(0, 0.02)
///     transformer.h.{i}.ln_1.weight/bias  (C)        1 / 0
///     transformer.h.{i}.attn.c_attn.weight/bias  (3C, C) / (3C)   N(0, 0.02) / 0
///     transformer.h.{i}.attn.c_proj.weight/bias  (C, C) / (C)     N(0, 0.02/√(2L)) / 0
///     transformer.h.{i}.ln_2.weight/bias  (C)        1 / 0
///     transformer.h.{i}.mlp.c_fc.weight/bias     (4C, C) / (4C)   N(0, 0.02) / 0
///     transformer.h.{i}.mlp.c_proj.weight/bias   (C, 4C) / (C)    N(0, 0.02/√(2L)) / 0
///     transformer.ln_f.weight/bias        (C)        1 / 0
///     lm_head.weight                      (V, C)     = transformer.wte.weight
///
/// Init order (what a seed means): weights are drawn from `gen` in exactly the order of this table,
/// i.e. of named_parameters(): wte, wpe, then for each block c_attn, attn.c_proj, c_fc, mlp.c_proj.
/// Biases and LayerNorms draw nothing. (PyTorch's generator differs, so the values are not
/// nanoGPT's; the distributions are.) With `bias = false` there are no bias parameters.
///
/// Ψ = V·C + T·C + L·(12C² + 13C) + 2C; GPT-2 124M: 124,439,808 (GPTConfig::num_parameters()).
///
/// A split model (tp::TensorParallelGPT, docs/design.md §14) is a GPT too: it overrides the pieces that differ
/// (embed, one block, head, the loss of its logits) and builds its own parts through the protected constructor,
/// so the engines drive both alike. The parts below (wte, blocks, ...) are then its own, not these.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "minitorch/random.h"
#include "nn/block.h"
#include "nn/gpt_config.h"
#include "nn/layers.h"
#include "nn/module.h"

namespace minitorch::nn {

class GPT : public Module {
 public:
  /// Builds and initialises the model; `config.validate()` must pass (vocab_size set).
  GPT(const GPTConfig& config, Generator& gen);
  ~GPT() override = default;

  const GPTConfig& config() const { return config_; }

  /// named_parameters() of GPT(config) without building it: names and shapes in the same order, no
  /// storage. What sizes a model without allocating it (the estimator plans the ZeRO partition of a
  /// model too big for this machine); tests check it against a built model.
  static std::vector<std::pair<std::string, Shape>> parameter_shapes(const GPTConfig& config);

  /// Token + position embeddings.   idx: (B, T) i32, T <= block_size -> x: (B, T, C)
  ///   x[b, t] = wte[idx[b, t]] + wpe[t]
  virtual Tensor embed(const Tensor& idx) const;
  /// Final LayerNorm and the LM head.   x: (B, T, C) -> logits: (B, T, V)
  virtual Tensor head(const Tensor& x) const;
  /// Block i.   x: (B, T, C) -> (B, T, C)
  virtual Tensor run_block(std::int64_t i, const Tensor& x) const;
  /// embed, every block, head.   idx: (B, T) i32 -> logits: (B, T, V)
  /// With activation checkpointing on, the blocks run in segments of `segment_size` consecutive blocks,
  /// each an autograd::checkpoint: only a segment's input (B, T, C) is kept for backward, which runs
  /// the segment's forward again (the last segment may be shorter).
  Tensor forward(const Tensor& idx) const;
  /// blocks[first, end) on x (what forward() runs between embed and head, and a pipeline stage runs on
  /// its share), in checkpointed segments of checkpoint_segment_size() blocks counted from `first`
  /// when checkpointing is on.   x: (B, T, C) -> (B, T, C)
  Tensor run_blocks(Tensor x, std::int64_t first, std::int64_t end) const;
  /// Activation checkpointing: 0 = off (every block keeps its activations), k >= 1 = segments of k
  /// blocks (config `activation_checkpointing`). k > n_layer is an error.
  void set_checkpoint_segments(std::int64_t segment_size);
  std::int64_t checkpoint_segment_size() const { return checkpoint_segment_size_; }
  /// cpu_checkpointing: each checkpointed segment's input waits for backward in host memory
  /// (autograd::SaveOnHost): B·T·C elements down per segment in forward, up again in the recompute.
  void set_checkpoint_on_host(bool on) { checkpoint_on_host_ = on; }
  bool checkpoint_on_host() const { return checkpoint_on_host_; }
  /// Mean cross-entropy of the next-token prediction.   idx, targets: (B, T) i32 -> scalar
  /// Targets equal to `ignore_index` (default -1) do not count.
  Tensor loss(const Tensor& idx, const Tensor& targets, std::int32_t ignore_index = -1) const;
  /// The loss part of loss(), for a last pipeline stage that has the logits.
  ///   logits: (B, T, V), targets: (B, T) i32 -> scalar (logits viewed as (B·T, V))
  static Tensor loss_from_logits(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index = -1);
  /// What loss() and a last pipeline stage apply to head()'s logits: loss_from_logits here; a split model's
  /// logits are its slice of the vocabulary and its loss is computed across the slices.
  virtual Tensor loss_of_logits(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index = -1) const {
    return loss_from_logits(logits, targets, ignore_index);
  }
  /// Ψ of the whole model (GPTConfig::num_parameters()), whatever this rank holds of it.
  std::int64_t model_parameters() const { return config_.num_parameters(); }

  /// Samples `max_new_tokens` tokens after `idx` (B, T0) i32 -> (B, T0 + max_new_tokens) i32, without
  /// recording a graph. Each step feeds the last block_size tokens, takes the last position's logits,
  /// divides by `temperature` (> 0), keeps the `top_k` largest (0 = all), and draws from the softmax
  /// with `gen` (one uniform per row per step, so the same generator state gives the same text).
  /// `vocab_limit` > 0: only ids below it are drawn (the tokenizer's vocabulary when vocab_size is
  /// padded above it; 0 = all vocab_size ids).
  Tensor generate(const Tensor& idx, std::int64_t max_new_tokens, float temperature, Generator& gen,
                  std::int64_t top_k = 0, std::int64_t vocab_limit = 0) const;

  // ---- the parts (registered as nanoGPT names them) ----
  std::shared_ptr<Module> transformer;            // "transformer": wte, wpe, h, ln_f
  std::shared_ptr<Embedding> wte;                 // transformer.wte
  std::shared_ptr<Embedding> wpe;                 // transformer.wpe
  std::vector<std::shared_ptr<Block>> blocks;     // transformer.h.0 ... transformer.h.{L-1}
  std::shared_ptr<LayerNorm> ln_f;                // transformer.ln_f
  std::shared_ptr<Linear> lm_head;                // lm_head, weight tied to wte.weight

 protected:
  /// For a subclass that builds its own parts (tp::TensorParallelGPT): the config only, no parameters.
  explicit GPT(const GPTConfig& config);

 private:
  GPTConfig config_;
  std::int64_t checkpoint_segment_size_ = 0;
  bool checkpoint_on_host_ = false;
};

}  // namespace minitorch::nn
