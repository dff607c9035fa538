#pragma once
/// \file stage1.h
/// ZeRO stage 1: the **optimizer states** are sharded. Every rank still holds all parameters and all
/// gradients, but only its shard's fp32 master, m and v — (P + G)·Ψ + K·Ψ/N bytes per rank
/// (docs/design.md §8), plus the padding that makes every bucket divide by N.
///
/// One optimizer step with A micro-steps (zero/partition.h has the layout):
///
///   micro-steps 1..G-1  backward accumulates into the flat gradient buffers; no communication
///   micro-step G        each bucket reduce-scattered (average) in place, from its gradient hook as
///                       soon as it is final when overlap_comm is on, else after backward:
///                       (N−1)/N·Ψ elements
///   step                (zero/sharded_optimizer.h) norm as one scalar all-reduce, clip, AdamW on
///                       my pieces, all-gather of the parameters: (N−1)/N·Ψ elements
///
/// Total 2·(N−1)/N·Ψ elements per step, DDP's volume, for K·Ψ·(N−1)/N bytes less per rank.
#include <memory>

#include "zero/sharded_strategy.h"

namespace minitorch::zero {

class Stage1 final : public ShardedStrategy {
 public:
  /// Broadcasts rank 0's parameters, moves them and their gradients into the partition's flat
  /// buffers, hooks the buckets and builds AdamW over this rank's pieces. `group`: N >= 2 ranks.
  /// `params`: the model's, or a pipeline stage's share (make_strategy).
  Stage1(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group,
         const nn::NamedTensors& params);

  std::string name() const override { return "ZeRO-1"; }
  int zero_stage() const override { return 1; }
  /// Reduces only at the boundary: the micro-steps before it accumulate into the full local gradients.
  void begin_backward(bool boundary) override;

 private:
  void paint_bucket(std::size_t b, trace::RankHoldings& h) const override;
  ModelStateBytes bucket_bytes(std::size_t b) const override;
  /// Starts bucket b's reduce-scatter: its average lands in this rank's shard of the same buffer.
  std::unique_ptr<dist::Work> launch(std::size_t b);
};

}  // namespace minitorch::zero
