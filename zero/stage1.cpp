#include "zero/stage1.h"
#include "minitorch/not_implemented.h"

namespace minitorch::zero {

Stage1::Stage1(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group,
               const nn::NamedTensors& params)
    : ShardedStrategy(std::move(model), group, Partition(params, config.zero.reduce_bucket_size, group.rank(), group.size())) {
  adopt_parameters_from_rank0(partition_, group_);  // even if the seeds differ
  partition_.adopt_gradients();
  // Each bucket in flight holds an f32 copy of itself while it is reduced.
  start_reducer_and_optimizer(
      config, [this](std::size_t b) { return launch(b); },
      [this](std::size_t b) { reduced_frame(*this, partition_, b, bucket_names_[b], progress_, /*local_freed=*/false); });
}

void Stage1::begin_backward(bool boundary) {
  partition_.adopt_gradients();  // re-attaches a .grad someone reset (model.zero_grad()); else nothing
  reducer_->begin_backward(/*reduce=*/boundary);  // accumulate locally until the boundary
  progress_.in_backward = true;
}

// ---- communication ----

std::unique_ptr<dist::Work> Stage1::launch(std::size_t b) {
  ShardedBucket& bucket = partition_.buckets()[b];
  events::FlatRange what("zero bucket", bucket.first, bucket.first + bucket.numel);  // for the traces
  // BEGIN SOLUTION L06.3
  return group_.reduce_scatter_into_async(bucket.grad_shard, bucket.grads.flat(), dist::ReduceOp::avg);
  // END SOLUTION
}

// ---- read-outs: what this rank holds, for the frames and the run report (no computation) ----

void Stage1::paint_bucket(std::size_t b, trace::RankHoldings& h) const {
  const ShardedBucket& bucket = partition_.buckets()[b];
  h.params.paint(bucket.first, bucket.first + bucket.numel, "whole");
  if (bucket.grads.numel() == 0) return;
  h.grads.paint(bucket.first, bucket.first + bucket.numel, "accumulating");  // one buffer: the shard is a view of it
  const auto [begin, end] = own_shard(partition_, b);
  h.grads.paint(begin, end, progress_.shard_state(b, "accumulating"));  // in place: its reduce-scatter writes here
}

ModelStateBytes Stage1::bucket_bytes(std::size_t b) const {
  const ShardedBucket& bucket = partition_.buckets()[b];  // whole parameters, whole gradients
  return {static_cast<std::int64_t>(bucket.params.flat().nbytes()), static_cast<std::int64_t>(bucket.grads.flat().nbytes()), 0};
}

}  // namespace minitorch::zero
