#pragma once
/// \file memory.h
/// What tensor parallelism leaves on each of t ranks and what it sends, from the GPT's shapes (docs/design.md §14);
/// tested to the byte against the allocator and the group's counts (tests/tp_mpi), in the run report's
/// `tensor_parallel` section and printed by bench-tp.
///
/// Parameters per rank (elements): the split matrices a t-th, the replicated pieces whole —
///   wte Vp/t·C (Vp: tp/vocab.h) + wpe T·C + ln_f 2C
///   + L · [ ln_1, ln_2 4C + c_attn (3C² + 3C)/t + attn.c_proj C²/t + C + c_fc (4C² + 4C)/t + mlp.c_proj 4C²/t + C ]
/// (the biases assume bias = true; lm_head is wte).
///
/// One block's activations saved for backward per rank (bytes; e = 4 in f32, 2 in 16-bit) —
///   a_t = e·(4·BTC + (12·BTC + B·H·T²)/t) + 4·4·BT
/// whole on every rank: the block's input, ln_1's output, the residual after attention and ln_2's output
/// (4·BTC; f's output is a view of its input); split: q, k, v (3·BTC/t), the softmax's (B, H/t, T, T), the heads'
/// output (BTC/t), c_fc's and GELU's outputs (8·BTC/t); the LayerNorms' mean and rstd in f32. With t = 1 this is
/// lesson 08's count e·(16·BTC + B·H·T²) + 16·BT; it is Megatron's sbh(10 + 24/t + 5as/(ht)) (Korthikanti et al.
/// 2022) without dropout masks, with our f32 statistics.
///
/// The tensor group's all-reduces per micro-batch (forward and backward), activations (B, T, C):
///   forward   the embedding's g, 2 g's per block (after attn.c_proj and mlp.c_proj)      1 + 2L   e bytes
///             again 2 per block with activation checkpointing (the recompute)            + 2L     e bytes
///             the loss: the max, Σ exp and the target's logit of B·T rows                3        f32
///   backward  attention's f (before c_attn): its backward through the 16-bit q, k, v     L        e bytes
///             the MLP's f (before c_fc) and ln_f's (before the head): f32 gradients      L + 1    f32
///             (an f32 gradient times a 16-bit weight stays f32)
/// (e: the parameters' dtype, 4 or 2.) Each all-reduce of n elements
/// sends dist::all_reduce_volume(n, t, rank) ≈ 2(t−1)/t·n from this rank on the ring.
#include <cstdint>

#include "nn/gpt_config.h"

namespace minitorch::tp {

/// Throws one clear error unless t ≥ 1 divides n_head (each rank computes whole heads; then t also divides
/// n_embd and 4·n_embd).
void check_head_split(const nn::GPTConfig& config, int t);
/// Parameter elements on each rank of a tensor group of `t` ranks (bias = true or false as the config says).
std::int64_t parameters_per_rank(const nn::GPTConfig& config, int t);
/// One block's saved activations per rank, in bytes, for micro-batch B, T tokens, e bytes an element.
std::int64_t block_activation_bytes(const nn::GPTConfig& config, std::int64_t B, std::int64_t T, int t, int e);

/// All-reduces of the tensor group: how many, and the elements and bytes this rank sends on the ring.
struct TensorTraffic {
  std::int64_t calls = 0, elements = 0, bytes = 0;
};
/// One micro-batch's all-reduces (the table above) on tensor rank `rank` of `t`: B sequences of T tokens,
/// parameters of e bytes, `recompute`: activation checkpointing runs the blocks' forward again.
TensorTraffic tensor_traffic_per_micro_batch(const nn::GPTConfig& config, std::int64_t B, std::int64_t T, int t,
                                             int rank, int e, bool recompute);

}  // namespace minitorch::tp
