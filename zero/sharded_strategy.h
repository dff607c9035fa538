#pragma once
/// \file sharded_strategy.h
/// What ZeRO-1, -2 and -3 share: the model laid out in buckets sharded over the N ranks (zero/partition.h),
/// the gradient reducer that counts each bucket's hooks down (zero/bucket_reducer.h), AdamW over this rank's
/// pieces (zero/sharded_optimizer.h) and how far this step's reduction has come (for the frames). A stage
/// adds only what it shards and when it communicates: its constructor, begin_backward / end_backward, its
/// bucket's launch, and what it holds (holdings, model_state_bytes).
#include <memory>
#include <string>
#include <vector>

#include "zero/bucket_reducer.h"
#include "zero/partition.h"
#include "zero/sharded_optimizer.h"
#include "zero/step_frames.h"
#include "zero/strategy.h"

namespace minitorch::zero {

class ShardedStrategy : public GradientStrategy {
 public:
  /// Every micro-step's backward reduces into the gradient shards (stages 2 and 3; stage 1 reduces only at
  /// the boundary).
  void begin_backward(bool boundary) override;
  /// The buckets whose hooks did not fire (no overlap_comm, or a parameter backward did not reach) start now.
  void end_backward() override;
  void reduce_gradients() override { reducer_->wait_all(); }
  /// The sharded optimizer's step (zero/sharded_optimizer.h); the gradient shards are zero after it.
  StepResult step(const StepRequest& r) override;
  trace::FlatSpace flat_space() const override { return partition_space(partition_, bucket_names_); }
  bool shards_optimizer_state() const override { return true; }
  nn::NamedTensors parameter_pieces() const override { return optimizer_->readable_pieces(); }
  void load_parameters(const nn::NamedTensors& whole) override { optimizer_->load_parameters(whole); }
  optim::AdamW& optimizer() override { return optimizer_->adamw(); }
  const optim::AdamW& optimizer() const override { return optimizer_->adamw(); }
  nn::NamedTensors optimizer_state() const override { return optimizer_->state_tensors(); }
  void load_optimizer_state(const nn::NamedTensors& state, std::int64_t steps) override {
    optimizer_->load_state(state, steps);
  }

  /// What this rank holds: every bucket as its stage paints it (paint_bucket), then its optimizer shard.
  trace::RankHoldings holdings() const override;
  /// Bytes of model states: every bucket's as its stage counts them (bucket_bytes), then the optimizer's.
  ModelStateBytes model_state_bytes() const override;
  /// The NVMe optimizer's swap files (offload_optimizer "nvme"): master, m, v under `optim`.
  ModelStateBytes disk_model_state_bytes() const override;
  std::optional<SwapStats> swap_stats() const override;

  const Partition& partition() const { return partition_; }
  const BucketReducer& reducer() const { return *reducer_; }
  /// The optimizer over this rank's shard (its offload or NVMe parts included).
  const ShardedOptimizer& sharded_optimizer() const { return *optimizer_; }

 protected:
  /// What the stage holds of bucket b now, read from its buffers: where the stages differ.
  virtual void paint_bucket(std::size_t b, trace::RankHoldings& holdings) const = 0;
  /// Bytes of parameters and gradients the stage holds for bucket b (`optim` is the optimizer's, counted once).
  virtual ModelStateBytes bucket_bytes(std::size_t b) const = 0;

  /// `partition`: the stage's buckets, planned (nothing allocated yet). `group`: N >= 2 ranks.
  ShardedStrategy(std::shared_ptr<nn::GPT> model, dist::ProcessGroup& group, Partition partition);
  /// The end of a stage's constructor, once its buffers are laid out: the reducer (two buckets in flight at
  /// most, DeepSpeed's double buffer with overlap_comm) calling `launch` / `finish` per bucket, and AdamW
  /// over this rank's pieces. Keeps reduce_bucket_size for `reduce`.
  void start_reducer_and_optimizer(const StrategyConfig& config, BucketReducer::Launch launch,
                                   BucketReducer::Finish finish);
  /// ZeRO-Infinity's NVMe (offload_optimizer or offload_param "nvme"): opens this rank's swap space, before
  /// anything is put there (zero/nvme_store.h); nothing without it.
  void open_swap(const StrategyConfig& config);
  /// Starts bucket b's reduction (zero/bucket_reducer.h: in chunks of reduce_bucket_size when it is bigger).
  std::unique_ptr<dist::Work> reduce(std::size_t b) {
    return reductions_[b].start(partition_, b, group_, reduce_bucket_elements_);
  }

  std::shared_ptr<nn::GPT> model_;
  dist::ProcessGroup& group_;
  Partition partition_;
  std::unique_ptr<NvmeStore> swap_;  ///< the rank's swap space (NVMe offload), declared before the optimizer that uses it
  /// Stages 2 and 3: per bucket, its buffers while it is reduced (declared before the reducer, whose
  /// destructor waits for the reductions still writing into them).
  std::vector<ShardReduction> reductions_;
  std::int64_t reduce_bucket_elements_ = 0;  ///< reduce_bucket_size: a bigger bucket is reduced in chunks (ZeRO-R's C_B)
  std::unique_ptr<BucketReducer> reducer_;
  std::unique_ptr<ShardedOptimizer> optimizer_;
  ReductionProgress progress_;             ///< for the frames (zero/step_frames.h)
  std::vector<std::string> bucket_names_;  ///< per bucket, as the frames name it ("bucket 0", ZeRO-3's units)
};

}  // namespace minitorch::zero
