#pragma once
/// \file stage2.h
/// ZeRO stage 2: the optimizer states **and the gradients** are sharded. Every rank holds all
/// parameters, its shard of the reduced gradient and its shard's optimizer states —
/// P·Ψ + (G + K)·Ψ/N bytes per rank (docs/design.md §8), plus padding. The full gradients only pass
/// through: backward makes a parameter's gradient, its bucket's hook copies the bucket into a
/// communication buffer and frees the gradients, and the reduce-scatter leaves 1/N of it.
///
/// One optimizer step with G micro-steps (zero/partition.h has the layout):
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
#include <vector>

#include "zero/bucket_reducer.h"
#include "zero/partition.h"
#include "zero/sharded_optimizer.h"
#include "zero/step_frames.h"
#include "zero/strategy.h"

namespace minitorch::zero {

class Stage2 final : public GradientStrategy {
 public:
  /// Broadcasts rank 0's parameters, moves them into the partition's flat buffers, allocates the
  /// gradient shards (contiguous_gradients: one buffer), hooks the buckets and builds AdamW over
  /// this rank's pieces. `group`: N >= 2 ranks.
  Stage2(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group);

  std::string name() const override { return "ZeRO-2"; }
  int stage() const override { return 2; }
  void begin_backward(bool) override;
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
  std::unique_ptr<dist::Work> launch(std::size_t b) { return in_flight_[b].start(partition_, b, group_); }
  void finish(std::size_t b);

  std::shared_ptr<nn::GPT> model_;
  dist::ProcessGroup& group_;
  Partition partition_;
  std::vector<ShardReduction> in_flight_;  ///< per bucket: its buffers while it is reduced
  std::unique_ptr<BucketReducer> reducer_;
  std::unique_ptr<ShardedOptimizer> optimizer_;
  ReductionProgress progress_;  ///< for the frames (zero/step_frames.h)
};

}  // namespace minitorch::zero
