#include "zero/stage1.h"
#include "minitorch/not_implemented.h"

namespace minitorch::zero {

Stage1::Stage1(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group,
               const nn::NamedTensors& params)
    : model_(std::move(model)), group_(group), partition_(params, config.zero.reduce_bucket_size, group.rank(), group.size()) {
  adopt_parameters_from_rank0(partition_, group_);  // even if the seeds differ
  partition_.adopt_gradients();
  progress_.reduced.assign(partition_.buckets().size(), false);
  // Two buckets in flight at most: each holds an f32 copy of its bucket while it is reduced.
  reducer_ = std::make_unique<BucketReducer>(
      partition_, config.zero.overlap_comm, /*max_in_flight=*/2, [this](std::size_t b) { return launch(b); },
      [this](std::size_t b) { reduced_frame(*this, partition_, b, "bucket " + std::to_string(b), progress_, false); });
  optimizer_ = std::make_unique<ShardedOptimizer>(partition_, config, group_);
  optimizer_->set_frame_source(this);
}

void Stage1::begin_backward(bool boundary) {
  partition_.adopt_gradients();  // re-attaches a .grad someone reset (model.zero_grad()); else nothing
  reducer_->begin_backward(/*reduce=*/boundary);  // accumulate locally until the boundary
  progress_.in_backward = true;
}

void Stage1::end_backward() {
  reducer_->end_backward();
  progress_.in_backward = false;
}

StepResult Stage1::step(const StepRequest& r) {
  const StepResult result = optimizer_->step(r);
  progress_.clear();  // the gradients are zero again
  return result;
}

// ---- communication ----

std::unique_ptr<dist::Work> Stage1::launch(std::size_t b) {
  ShardedBucket& bucket = partition_.buckets()[b];
  events::FlatRange what("zero bucket", bucket.first, bucket.first + bucket.numel);  // for the traces
  // BEGIN SOLUTION L06.3
  return group_.reduce_scatter_into_async(bucket.grad_shard, bucket.grads.flat(), dist::ReduceOp::avg);
  // END SOLUTION
}

// ---- compute ----

trace::RankHoldings Stage1::holdings() const {
  trace::RankHoldings h;
  for (std::size_t b = 0; b < partition_.buckets().size(); ++b) {
    const ShardedBucket& bucket = partition_.buckets()[b];
    h.params.paint(bucket.first, bucket.first + bucket.numel, "whole");
    if (bucket.grads.numel() == 0) continue;
    h.grads.paint(bucket.first, bucket.first + bucket.numel, "accumulating");  // one buffer: the shard is a view of it
    const auto [begin, end] = own_shard(partition_, b);
    if (progress_.reduced[b]) h.grads.paint(begin, end, "reduced");
  }
  paint_optimizer_shard(partition_, optimizer(), h.optim);
  return h;
}

ModelStateBytes Stage1::model_state_bytes() const {
  ModelStateBytes b;
  for (const ShardedBucket& bucket : partition_.buckets()) {
    b.param += static_cast<std::int64_t>(bucket.params.flat().nbytes());
    b.grad += static_cast<std::int64_t>(bucket.grads.flat().nbytes());
  }
  b.optim = optimizer().state_bytes();
  return b;
}

}  // namespace minitorch::zero
