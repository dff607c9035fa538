#pragma once
/// \file memory.h
/// What tensor parallelism leaves on each of t ranks, from the GPT's shapes (docs/design.md §14); tested to the
/// byte against the allocator (tests/tp_mpi/test_tp_gpt.cpp) and printed by bench-tp.
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

}  // namespace minitorch::tp
