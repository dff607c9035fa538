#pragma once
/// \file activation_formulas.h
/// The activations of one micro-batch on the device, from the GPT's shapes alone (docs/design.md §10): what
/// the allocator's `activation` tag peaks at during a forward and backward, so that the out-of-memory levers
/// (runtime/out_of_memory.h) and lesson 10 predict a run before it runs — never from a partial forward.
///
/// B micro-batch, T tokens, C width, H heads, L blocks, V vocabulary; e = bytes of an activation (4 in f32,
/// 2 in bf16 or fp16). The terms, each added to lesson 08's count of one block:
///
///   a  = e·(16·BTC + B·H·T²) + 4·4BT   one block's tensors saved for backward (lesson 08; the LayerNorms'
///                                      mean and rstd stay f32)
///   x  = e·BTC                         a block's input: what a checkpointed segment keeps
///   head phase (the head's backward):  the blocks' share + ln_f's input and output 2·e·BTC and its mean,
///                                      rstd 2·4BT + the larger of: in the loss's backward the logits e·BTV +
///                                      their gradient 4·BTV (the loss is f32), and in 16-bit the f32 copy of
///                                      the logits the loss reads 4·BTV; in lm_head's backward the logits'
///                                      gradient 4·BTV + the tied weight's gradient 4·V·C + ln_f's output
///                                      gradient 4·BTC (+ the logits e·BTV, still held in 16-bit)
///   block phase (the last block's backward, in its MLP): the blocks' share + the gradients flowing back,
///                                      f32 in every precision — dy and the MLP's (B,T,4C) gradient, 5·4BTC
///                                      in f32; in 16-bit also the GELU's input gradient, 9·4BTC — and the
///                                      MLP c_proj's weight gradient 4·4C² (+ its bias's 4C in f32)
///   always: the positions T·4 (i32, kept by wpe's backward) and the loss 4
///
/// The blocks' share: L·a without checkpointing. With segments of k blocks (s = ⌈L/k⌉ segments): s·x in
/// the head phase; in the block phase, while segment j (k_j blocks) is recomputed, the inputs of the j
/// segments before it, its own input (the recompute's copy, autograd/checkpoint.h) and its k_j·a. With
/// cpu_checkpointing the inputs wait on the host: none in the head phase, the recomputed segment's own in
/// the block phase.
/// Measured on `sim` (tests/runtime/test_activation_formulas.cpp): equal to the byte in f32; in 16-bit equal
/// up to the loss's 4 bytes without checkpointing, and within 6 % with it (f32 copies made during the
/// recompute, not modelled).
#include <cstdint>
#include <string>

#include "nn/gpt_config.h"

namespace minitorch::runtime {

/// One micro-batch's shapes and the precision its activations are in.
struct ActivationShape {
  std::int64_t B = 1, T = 1, C = 1, H = 1, L = 1, V = 1;
  int element = 4;           ///< e: 4 in f32, 2 in bf16 / fp16
  std::int64_t segment = 0;  ///< activation checkpointing's segment_size k; 0 = off
  bool inputs_on_host = false;  ///< cpu_checkpointing: the segments' inputs wait on the host, one comes up at a time
};

/// The shapes of `model` at micro-batch `B` (T = block_size), in 16-bit when `half`, segments of `segment`.
ActivationShape activation_shape(const nn::GPTConfig& model, std::int64_t B, bool half, std::int64_t segment,
                                 bool inputs_on_host = false);

/// The terms above, in bytes.
struct ActivationEstimate {
  double block = 0;          ///< a
  double input = 0;          ///< x
  double blocks_head = 0;    ///< the blocks' share in the head phase (L·a, or s·x)
  double blocks_block = 0;   ///< ... in the block phase: inputs_kept·x + blocks_held·a
  std::int64_t inputs_kept = 0, blocks_held = 0;
  double head = 0;           ///< ln_f, the logits and their gradients: 2·e·BTC + 8·BT + max(logits, lm_head)
  double logits = 0;         ///< in the loss's backward: (e + 4 [+ 4 in 16-bit])·BTV
  double lm_head = 0;        ///< in lm_head's: 4·BTV + 4·V·C (the tied weight's gradient) + 4·BTC [+ e·BTV]
  double backward = 0;       ///< the last block's backward working set
  double always = 0;         ///< positions and the loss
  double head_phase() const { return blocks_head + head + always; }
  double block_phase() const { return blocks_block + backward + always; }
  double peak() const { return head_phase() > block_phase() ? head_phase() : block_phase(); }
};
ActivationEstimate activation_bytes(const ActivationShape& s);

/// The estimate as one line naming every term with its figures:
///   "L·a + dy and the MLP's gradients 5·4·BTC + c_proj's weight gradient 4·4C² (+4C) + ... = 2.66 MiB"
std::string activation_text(const ActivationShape& s);

}  // namespace minitorch::runtime
