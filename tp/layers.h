#pragma once
/// \file layers.h
/// The split layers of Megatron-style tensor parallelism over a tensor group of t ranks (tp/regions.h has
/// the two operators they use). Each is built from the *full* tensors, which every rank draws from the
/// same seed exactly as the unsplit model does, and keeps its own slice: t ranks start from the 1-rank
/// model, bit for bit, and compute the same function.
///
///   ColumnParallelLinear   W (out, in) split by output columns: rank r keeps rows r of W (out/t of them)
///                          y_r = f(x) W_r^T + b_r      x: (..., in) whole -> y_r: (..., out/t), no traffic
///   RowParallelLinear      W (out, in) split by input rows: rank r keeps columns r of W (in/t of them)
///                          y = g(x_r W_r^T) + b        x_r: (..., in/t) -> y: (..., out) whole, one all-reduce
///   VocabParallelEmbedding wte (V, C) split by token rows, padded to Vp (tp/vocab.h)
///                          y = g(mask_r · wte_r[idx - start_r])   idx: (...) -> (..., C) whole, one all-reduce
///
/// A column layer feeding a row layer (the MLP's c_fc → c_proj; attention's c_attn → heads → c_proj) needs
/// nothing between them: the (..., out/t) slice each rank holds is exactly the input slice its row layer
/// wants. So a transformer block costs two all-reduces forward (the two g's) and two backward (the f's).
/// Shapes below are per rank; t = group.size(), r = group.rank().
#include <cstdint>

#include "dist/process_group.h"
#include "nn/module.h"
#include "tp/vocab.h"

namespace minitorch::tp {

class ColumnParallelLinear : public nn::Module {
 public:
  /// full_weight: (out, in), full_bias: (out) or undefined. The out dimension is `stacked` equal blocks (3
  /// for attention's [q | k | v]); rank r keeps the r-th t-th of every block, so its heads' q, k and v stay
  /// together: weight (out/t, in), bias (out/t). Throws if t does not divide each block.
  ColumnParallelLinear(const Tensor& full_weight, const Tensor& full_bias, dist::ProcessGroup& group,
                       std::int64_t stacked = 1);
  /// x: (..., in), the same on every rank -> (..., out/t): this rank's columns of x W^T + b
  Tensor forward(const Tensor& x) const;

  Tensor weight;  // (out/t, in)
  Tensor bias;    // (out/t), or undefined
  dist::ProcessGroup* group;
};

class RowParallelLinear : public nn::Module {
 public:
  /// full_weight: (out, in): rank r keeps columns [r·in/t, (r+1)·in/t), weight (out, in/t); full_bias (out)
  /// stays whole on every rank and is added once, after the all-reduce. Throws if t does not divide in.
  RowParallelLinear(const Tensor& full_weight, const Tensor& full_bias, dist::ProcessGroup& group);
  /// x: (..., in/t), this rank's slice -> (..., out), the same on every rank
  Tensor forward(const Tensor& x) const;

  Tensor weight;  // (out, in/t)
  Tensor bias;    // (out), or undefined
  dist::ProcessGroup* group;
};

class VocabParallelEmbedding : public nn::Module {
 public:
  /// full_weight: (V, C). The vocabulary is padded to Vp = padded_vocab_size(V, t) with zero rows (never
  /// drawn from the RNG); rank r keeps rows slice.start .. + slice.rows: weight (Vp/t, C).
  VocabParallelEmbedding(const Tensor& full_weight, dist::ProcessGroup& group);
  /// idx: (...) i32 in [0, V) -> (..., C), the same on every rank
  Tensor forward(const Tensor& idx) const;

  Tensor weight;  // (Vp/t, C)
  std::int64_t vocab_size;  // V, without the padding
  VocabSlice slice;
  dist::ProcessGroup* group;
};

/// Rows `[r·n/t, (r+1)·n/t)` of each of `blocks` equal blocks of `full`'s first dimension, side by side in
/// a new contiguous tensor (blocks = 1: one contiguous slice).   full: (n, ...) -> (n/t, ...)
Tensor split_rows(const Tensor& full, int rank, int size, std::int64_t blocks, const char* what);

}  // namespace minitorch::tp
