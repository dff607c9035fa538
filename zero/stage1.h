#pragma once
/// \file stage1.h
/// ZeRO stage 1: the **optimizer states** are sharded. Every rank still holds all parameters and all
/// gradients, but only its shard's fp32 master, m and v — (P + G)·Ψ + K·Ψ/N bytes per rank
/// (docs/design.md §8), plus the padding that makes every bucket divide by N.
///
/// One optimizer step with G micro-steps (zero/partition.h has the layout):
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

#include "zero/bucket_reducer.h"
#include "zero/partition.h"
#include "zero/sharded_optimizer.h"
#include "zero/step_frames.h"
#include "zero/strategy.h"

namespace minitorch::zero {

class Stage1 final : public GradientStrategy {
 public:
  /// Broadcasts rank 0's parameters, moves them and their gradients into the partition's flat
  /// buffers, hooks the buckets and builds AdamW over this rank's pieces. `group`: N >= 2 ranks.
  /// `params`: the model's, or a pipeline stage's share (make_strategy).
  Stage1(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group,
         const nn::NamedTensors& params);

  std::string name() const override { return "ZeRO-1"; }
  int stage() const override { return 1; }
  void begin_backward(bool boundary) override;
  void end_backward() override;
  void reduce_gradients() override { reducer_->wait_all(); }
  StepResult step(const StepRequest& r) override;
  ModelStateBytes model_state_bytes() const override;
  trace::FlatSpace flat_space() const override { return partition_space(partition_, numbered_buckets(partition_)); }
  trace::RankHoldings holdings() const override;
  bool shards_optimizer_state() const override { return true; }
  nn::NamedTensors parameter_pieces() const override { return partition_.piece_params(); }
  void load_parameters(const nn::NamedTensors& whole) override { optimizer_->load_parameters(whole); }
  optim::AdamW& optimizer() override { return optimizer_->adamw(); }
  const optim::AdamW& optimizer() const override { return optimizer_->adamw(); }

  const Partition& partition() const { return partition_; }
  const BucketReducer& reducer() const { return *reducer_; }

 private:
  /// Starts bucket b's reduce-scatter: its average lands in this rank's shard of the same buffer.
  std::unique_ptr<dist::Work> launch(std::size_t b);

  std::shared_ptr<nn::GPT> model_;
  dist::ProcessGroup& group_;
  Partition partition_;
  std::unique_ptr<BucketReducer> reducer_;
  std::unique_ptr<ShardedOptimizer> optimizer_;
  ReductionProgress progress_;  ///< for the frames (zero/step_frames.h)
};

}  // namespace minitorch::zero
