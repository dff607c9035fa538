#pragma once
/// \file stage0.h
/// ZeRO stage 0: plain data parallelism. Every rank holds the whole model, all of its gradients and
/// all of its optimizer states — (P + G + K)·Ψ bytes per rank (docs/design.md §8) — and averages the
/// gradients over the ranks before every rank takes the same optimizer step.
///
/// The reduction is DDP's (dist/ddp.h): bucket all-reduces started from the gradient hooks while
/// backward runs, on the boundary micro-step only (no_sync before it). On one rank there is nothing
/// to reduce and no DDP object: the same class is then single-process training.
#include <memory>
#include <vector>

#include "dist/ddp.h"
#include "zero/strategy.h"

namespace minitorch::zero {

class Stage0 final : public GradientStrategy {
 public:
  /// Broadcasts rank 0's parameters to every rank (N > 1), hooks DDP's buckets of
  /// `zero.reduce_bucket_size` elements, and builds AdamW over `params`: all of the model's, or a
  /// pipeline stage's share (make_strategy).
  Stage0(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup* group,
         const nn::NamedTensors& params);

  std::string name() const override { return ddp_ ? "DDP" : "single rank"; }
  int zero_stage() const override { return 0; }
  void begin_backward(bool boundary) override;
  void end_backward() override;
  void reduce_gradients() override;
  StepResult step(const StepRequest& r) override;
  ModelStateBytes model_state_bytes() const override;
  void load_parameters(const nn::NamedTensors& whole) override;
  trace::FlatSpace flat_space() const override;
  trace::RankHoldings holdings() const override;
  optim::AdamW& optimizer() override { return *optimizer_; }
  const optim::AdamW& optimizer() const override { return *optimizer_; }

  /// The DDP wrapper: its buckets and timings (null on one rank).
  const dist::DistributedDataParallel* ddp() const { return ddp_.get(); }

 private:
  /// AdamW's step with each gradient × clip / loss_scale: without loss scaling the gradients scaled in
  /// place (clip < 1) and AdamW's own step; in fp16 the tiled step (zero/tiled_step.h), which unscales in f32.
  void update(const std::vector<Tensor>& params, double clip, double loss_scale);

  std::shared_ptr<nn::GPT> model_;
  bool whole_model_;  ///< false: a pipeline stage's share of the parameters
  std::unique_ptr<dist::DistributedDataParallel> ddp_;
  std::unique_ptr<optim::AdamW> optimizer_;
  /// Every parameter's place in the flat space: DDP's buckets end to end (reverse order of use, with
  /// their padding), or the model's order on one rank.
  struct Slot {
    std::string name;
    Tensor param;
    std::int64_t begin;
  };
  std::vector<Slot> slots_;
  trace::FlatSpace space_;
  bool reduced_ = false;  ///< the gradients are DDP's averages (frames)
};

}  // namespace minitorch::zero
