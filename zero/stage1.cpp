#include "zero/stage1.h"

namespace minitorch::zero {

Stage1::Stage1(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group)
    : model_(std::move(model)),
      group_(group),
      partition_(model_->named_parameters(), config.zero.reduce_bucket_size, group.rank(), group.size()) {
  adopt_parameters_from_rank0(partition_, group_);  // even if the seeds differ
  partition_.adopt_gradients();
  // Two buckets in flight at most: each holds an f32 copy of its bucket while it is reduced.
  reducer_ = std::make_unique<BucketReducer>(
      partition_, config.zero.overlap_comm, /*max_in_flight=*/2, [this](std::size_t b) { return launch(b); },
      [](std::size_t) {});
  optimizer_ = std::make_unique<ShardedOptimizer>(partition_, config, group_);
}

void Stage1::begin_backward(bool boundary) {
  partition_.adopt_gradients();  // re-attaches a .grad someone reset (model.zero_grad()); else nothing
  reducer_->begin_backward(/*reduce=*/boundary);  // accumulate locally until the boundary
}

// ---- communication ----

std::unique_ptr<dist::Work> Stage1::launch(std::size_t b) {
  ShardedBucket& bucket = partition_.buckets()[b];
  return group_.reduce_scatter_into_async(bucket.grad_shard, bucket.grads.flat(), dist::ReduceOp::avg);
}

// ---- compute ----

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
