#include "zero/stage2.h"

namespace minitorch::zero {

Stage2::Stage2(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group)
    : model_(std::move(model)),
      group_(group),
      partition_(model_->named_parameters(), config.zero.reduce_bucket_size, group.rank(), group.size()) {
  adopt_parameters_from_rank0(partition_, group_);  // even if the seeds differ
  partition_.allocate_gradient_shards(config.zero.contiguous_gradients);
  in_flight_.resize(partition_.buckets().size());
  // Two buckets in flight at most (DeepSpeed's double buffer with overlap_comm): the comm memory is
  // bounded by two buckets of reduce_bucket_size elements (and their f32 copies in bf16).
  reducer_ = std::make_unique<BucketReducer>(
      partition_, config.zero.overlap_comm, /*max_in_flight=*/2, [this](std::size_t b) { return launch(b); },
      [this](std::size_t b) { finish(b); });
  optimizer_ = std::make_unique<ShardedOptimizer>(partition_, config, group_);
}

// ---- compute ----

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
