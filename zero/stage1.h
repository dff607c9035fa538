#pragma once
/// \file stage1.h
/// ZeRO stage 1: the **optimizer states** are sharded. Every rank still holds all parameters and all
/// gradients, but only its shard's fp32 master, m and v — (P + G)·Ψ + K·Ψ/N bytes per rank
/// (docs/design.md §8), plus the padding that makes every bucket divide by N.
///
/// One optimizer step with G micro-steps (zero/partition.h has the layout):
///
///   micro-steps 1..G   backward accumulates into the flat gradient buffers (no communication)
///   boundary           reduce-scatter (average) each bucket's gradients:   (N−1)/N·Ψ elements
///                      global norm: Σ g² of my shard, all-reduced as one scalar; clip my shard
///                      AdamW on my pieces (their master, m, v: K·Ψ/N)
///                      all-gather each bucket's parameters from their owners: (N−1)/N·Ψ elements
///
/// Total 2·(N−1)/N·Ψ elements per step, DDP's volume, for K·Ψ·(N−1)/N bytes less per rank.
/// Communication (reduce_gradients, gather_parameters) and compute (step) are separate functions.
#include <memory>

#include "zero/partition.h"
#include "zero/strategy.h"

namespace minitorch::zero {

class Stage1 final : public GradientStrategy {
 public:
  /// Broadcasts rank 0's parameters, moves them into the partition's flat buffers with their
  /// gradients, and builds AdamW over this rank's pieces. `group` must have N >= 2 ranks.
  Stage1(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group);

  std::string name() const override { return "ZeRO-1"; }
  int stage() const override { return 1; }
  void begin_backward(bool boundary) override;
  void end_backward() override {}
  void reduce_gradients() override;
  double step(float lr, double max_norm) override;
  ModelStateBytes model_state_bytes() const override;
  bool shards_optimizer_state() const override { return true; }
  optim::AdamW& optimizer() override { return *optimizer_; }
  const optim::AdamW& optimizer() const override { return *optimizer_; }

  const Partition& partition() const { return partition_; }

 private:
  /// Every bucket's parameters from their owners (after the update).
  void gather_parameters();

  std::shared_ptr<nn::GPT> model_;
  dist::ProcessGroup& group_;
  Partition partition_;
  std::unique_ptr<optim::AdamW> optimizer_;
};

}  // namespace minitorch::zero
