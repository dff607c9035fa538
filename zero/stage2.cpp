#include "zero/stage2.h"

namespace minitorch::zero {

Stage2::Stage2(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group)
    : model_(std::move(model)),
      group_(group),
      partition_(model_->named_parameters(), config.zero.reduce_bucket_size, group.rank(), group.size()) {
  adopt_parameters_from_rank0(partition_, group_);  // even if the seeds differ
  partition_.allocate_gradient_shards(config.zero.contiguous_gradients);
  in_flight_.resize(partition_.buckets().size());
  progress_.reduced.assign(partition_.buckets().size(), false);
  // Two buckets in flight at most (DeepSpeed's double buffer with overlap_comm): the comm memory is
  // bounded by two buckets of reduce_bucket_size elements (and their f32 copies in bf16).
  reducer_ = std::make_unique<BucketReducer>(
      partition_, config.zero.overlap_comm, /*max_in_flight=*/2, [this](std::size_t b) { return launch(b); },
      [this](std::size_t b) { finish(b); });
  optimizer_ = std::make_unique<ShardedOptimizer>(partition_, config, group_);
  optimizer_->set_frame_source(this);
}

void Stage2::begin_backward(bool) {
  reducer_->begin_backward(/*reduce=*/true);  // every micro-step reduces into the shard
  progress_.in_backward = true;
}

void Stage2::end_backward() {
  reducer_->end_backward();
  progress_.in_backward = false;
}

void Stage2::finish(std::size_t b) {
  in_flight_[b].finish(partition_, b);
  reduced_frame(*this, partition_, b, "bucket " + std::to_string(b), progress_, true);
}

StepResult Stage2::step(const StepRequest& r) {
  const StepResult result = optimizer_->step(r);
  progress_.clear();  // the gradient shards are zero again
  return result;
}

// ---- compute ----

trace::RankHoldings Stage2::holdings() const {
  trace::RankHoldings h;
  for (std::size_t b = 0; b < partition_.buckets().size(); ++b) {
    const ShardedBucket& bucket = partition_.buckets()[b];
    h.params.paint(bucket.first, bucket.first + bucket.numel, "whole");
    paint_sharded_gradients(partition_, b, progress_, h.grads);
  }
  paint_optimizer_shard(partition_, optimizer(), h.optim);
  return h;
}

ModelStateBytes Stage2::model_state_bytes() const {
  ModelStateBytes b;
  for (const ShardedBucket& bucket : partition_.buckets()) {
    b.param += static_cast<std::int64_t>(bucket.params.flat().nbytes());
    b.grad += static_cast<std::int64_t>(bucket.grad_shard.nbytes());
  }
  b.optim = optimizer().state_bytes();
  return b;
}

}  // namespace minitorch::zero
