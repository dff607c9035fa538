#include "zero/stage2.h"

namespace minitorch::zero {

Stage2::Stage2(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group)
    : ShardedStrategy(model, group, Partition(model->named_parameters(), config.zero.reduce_bucket_size, group.rank(), group.size())) {
  adopt_parameters_from_rank0(partition_, group_);  // even if the seeds differ
  partition_.allocate_gradient_shards(config.zero.contiguous_gradients);
  reductions_.resize(partition_.buckets().size());
  // The comm memory is bounded by the two buckets in flight (and their f32 copies in bf16).
  start_reducer_and_optimizer(
      config, [this](std::size_t b) { return launch(b); }, [this](std::size_t b) { finish(b); });
}

void Stage2::finish(std::size_t b) {
  reductions_[b].finish(partition_, b);
  reduced_frame(*this, partition_, b, bucket_names_[b], progress_, /*local_freed=*/true);
}

// ---- read-outs: what this rank holds, for the frames and the run report (no computation) ----

void Stage2::paint_bucket(std::size_t b, trace::RankHoldings& h) const {
  const ShardedBucket& bucket = partition_.buckets()[b];
  h.params.paint(bucket.first, bucket.first + bucket.numel, "whole");
  paint_sharded_gradients(partition_, b, progress_, h.grads, reductions_[b].grads);
}

ModelStateBytes Stage2::bucket_bytes(std::size_t b) const {
  const ShardedBucket& bucket = partition_.buckets()[b];  // whole parameters, the gradient shard
  return {static_cast<std::int64_t>(bucket.params.flat().nbytes()), static_cast<std::int64_t>(bucket.grad_shard.nbytes()), 0};
}

}  // namespace minitorch::zero
