#include "zero/stage2.h"

#include "minitorch/ops.h"

namespace minitorch::zero {

Stage2::Stage2(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group)
    : model_(std::move(model)),
      group_(group),
      partition_(model_->named_parameters(), config.zero.reduce_bucket_size, group.rank(), group.size()) {
  {
    TagScope scope(MemTag::param);
    partition_.adopt_parameters();
  }
  for (ShardedBucket& b : partition_.buckets()) {  // every rank starts from rank 0's weights
    Tensor flat = b.params.flat();
    group_.broadcast(flat, 0);
  }
  partition_.allocate_gradient_shards(config.zero.contiguous_gradients);
  in_flight_.resize(partition_.buckets().size());
  // Two buckets in flight at most (DeepSpeed's double buffer with overlap_comm): the comm memory is
  // bounded by two buckets of reduce_bucket_size elements (and their f32 copies in bf16).
  reducer_ = std::make_unique<BucketReducer>(
      partition_, config.zero.overlap_comm, /*max_in_flight=*/2, [this](std::size_t b) { return launch(b); },
      [this](std::size_t b) { finish(b); });
  optimizer_ = std::make_unique<ShardedOptimizer>(partition_, config, group_);
}

// ---- communication ----

std::unique_ptr<dist::Work> Stage2::launch(std::size_t b) {
  ShardedBucket& bucket = partition_.buckets()[b];
  InFlight& f = in_flight_[b];
  {
    TagScope scope(MemTag::comm);
    f.flat = Tensor::zeros({bucket.numel}, bucket.params.dtype(), bucket.params.flat().device());
    f.reduced = Tensor::empty({bucket.numel / group_.size()}, bucket.params.dtype(), bucket.params.flat().device());
  }
  for (std::size_t slot = 0; slot < bucket.members.size(); ++slot) {  // flatten, then free the gradients
    Tensor p = partition_.params()[bucket.members[slot]].second;
    const FlatBuffer::Range r = bucket.params.slot(slot);
    if (p.grad().defined()) {  // a parameter this backward did not reach contributes zeros
      Tensor into = f.flat.narrow(0, r.begin, r.size()).view(p.shape());
      into.copy_(p.grad());
    }
    p.set_grad(Tensor());
  }
  return group_.reduce_scatter_into_async(f.reduced, f.flat, dist::ReduceOp::avg);
}

void Stage2::finish(std::size_t b) {
  InFlight& f = in_flight_[b];
  Tensor shard = partition_.buckets()[b].grad_shard;
  ops::add_(shard, f.reduced);  // accumulation: the micro-steps' averages add up (loss is / G)
  f = InFlight{};               // the comm buffers go back to the allocator
}

// ---- compute ----

double Stage2::step(float lr, double max_norm) {
  const double norm = optimizer_->step(lr, max_norm);
  partition_.zero_gradients();
  return norm;
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
