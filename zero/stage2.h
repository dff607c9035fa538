#pragma once
/// \file stage2.h
/// ZeRO stage 2: the optimizer states **and the gradients** are sharded. Every rank holds all
/// parameters, its shard of the reduced gradient and its shard's optimizer states —
/// P·Ψ + (G + K)·Ψ/N bytes per rank (docs/design.md §8), plus padding. The full gradients only pass
/// through: backward makes a parameter's gradient, its bucket's hook copies the bucket into a
/// communication buffer and frees the gradients, and the reduce-scatter leaves 1/N of it.
///
/// One optimizer step with A micro-steps (zero/partition.h has the layout):
///
///   every micro-step   each bucket, once its gradients are final: copy into a `comm` buffer, free
///                      the gradients, reduce-scatter (average) — from the hook while backward runs
///                      when overlap_comm is on, else after backward — and add the result into my
///                      gradient shard: (N−1)/N·Ψ elements per micro-step
///   step               (zero/sharded_optimizer.h) norm, clip, AdamW on my pieces, all-gather of the
///                      parameters: (N−1)/N·Ψ elements
///
/// Total (G + 1)·(N−1)/N·Ψ elements per step: with accumulation ZeRO-2 moves more than ZeRO-1 (DeepSpeed
/// reduces every micro-step too), the price of never holding a full gradient.
#include <memory>

#include "zero/sharded_strategy.h"

namespace minitorch::zero {

class Stage2 final : public ShardedStrategy {
 public:
  /// Broadcasts rank 0's parameters, moves them into the partition's flat buffers, allocates the
  /// gradient shards (contiguous_gradients: one buffer), hooks the buckets and builds AdamW over
  /// this rank's pieces. `group`: N >= 2 ranks.
  Stage2(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group);

  std::string name() const override { return "ZeRO-2"; }
  int zero_stage() const override { return 2; }

 private:
  void paint_bucket(std::size_t b, trace::RankHoldings& h) const override;
  ModelStateBytes bucket_bytes(std::size_t b) const override;
  std::unique_ptr<dist::Work> launch(std::size_t b) { return reduce(b); }
  void finish(std::size_t b);
};

}  // namespace minitorch::zero
