#include "zero/stage1.h"

#include <cmath>

#include "optim/clip.h"

namespace minitorch::zero {

Stage1::Stage1(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group)
    : model_(std::move(model)),
      group_(group),
      partition_(model_->named_parameters(), config.zero.reduce_bucket_size, group.rank(), group.size()) {
  {
    TagScope scope(MemTag::param);
    partition_.adopt_parameters();
  }
  // Every rank starts from rank 0's weights (even if the seeds differ): one broadcast per bucket.
  for (ShardedBucket& b : partition_.buckets()) {
    Tensor flat = b.params.flat();
    group_.broadcast(flat, 0);
  }
  partition_.adopt_gradients();
  const OptimizerConfig& o = config.optimizer;
  optim::AdamWOptions opts{static_cast<float>(o.lr), static_cast<float>(o.beta1), static_cast<float>(o.beta2),
                           static_cast<float>(o.eps), static_cast<float>(o.weight_decay)};
  optimizer_ = std::make_unique<optim::AdamW>(partition_.optimizer_groups(opts.lr, opts.weight_decay), opts);
}

void Stage1::begin_backward(bool) {
  partition_.adopt_gradients();  // re-attaches a .grad someone reset (model.zero_grad()); else nothing
}

// ---- communication ----

void Stage1::reduce_gradients() {
  // Each bucket's average lands in this rank's shard of the same buffer (the rest of it is stale).
  // One bucket at a time: the reduction reads an f32 copy of the bucket (its output lies inside its
  // input), so the comm memory stays bounded by reduce_bucket_size; after backward there is no
  // compute left to overlap with.
  for (ShardedBucket& b : partition_.buckets()) {
    Tensor mine = b.grads.shard_view(group_.rank());
    group_.reduce_scatter_into(mine, b.grads.flat(), dist::ReduceOp::avg);
  }
}

void Stage1::gather_parameters() {
  std::vector<std::unique_ptr<dist::Work>> inflight;
  for (ShardedBucket& b : partition_.buckets()) {
    Tensor full = b.params.flat();
    inflight.push_back(group_.all_gather_into_async(full, b.params.shard_view(group_.rank())));
  }
  for (auto& w : inflight) w->wait();
}

// ---- compute: the update of this rank's pieces ----

double Stage1::step(float lr, double max_norm) {
  std::vector<Tensor> mine = optimizer_->parameters();  // this rank's pieces, .grad = reduced shard
  // The global norm from one scalar: Σ g² over every rank's shard (padding is zero and unowned).
  Tensor sum_sq = Tensor::full({1}, static_cast<float>(optim::grad_sum_squares(mine)));
  group_.all_reduce(sum_sq, dist::ReduceOp::sum);
  const double norm = std::sqrt(static_cast<double>(sum_sq.item()));
  if (max_norm > 0) {
    const double coef = optim::clip_coefficient(norm, max_norm);
    if (coef < 1.0) optim::scale_grads(mine, static_cast<float>(coef));
  }
  optimizer_->set_lr(lr);
  optimizer_->step();
  gather_parameters();
  partition_.zero_gradients();
  return norm;
}

ModelStateBytes Stage1::model_state_bytes() const {
  ModelStateBytes b;
  for (const ShardedBucket& bucket : partition_.buckets()) {
    b.param += static_cast<std::int64_t>(bucket.params.flat().nbytes());
    b.grad += static_cast<std::int64_t>(bucket.grads.flat().nbytes());
  }
  b.optim = optimizer_->state_bytes();
  return b;
}

}  // namespace minitorch::zero
