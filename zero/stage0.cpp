#include "zero/stage0.h"

#include <cmath>

#include "optim/clip.h"

namespace minitorch::zero {

Stage0::Stage0(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup* group)
    : model_(std::move(model)) {
  if (group && group->size() > 1) {
    // Every rank starts from rank 0's weights (even if the seeds differ), then DDP hooks the grads.
    ddp_ = std::make_unique<dist::DistributedDataParallel>(model_->named_parameters(), *group,
                                                           config.zero.reduce_bucket_size);
    ddp_->broadcast_parameters(0);
  }
  optimizer_ = make_adamw(model_->named_parameters(), config);
}

// ---- communication: DDP's hooks reduce during the boundary backward; the rest waits here ----

void Stage0::begin_backward(bool boundary) {
  if (!ddp_) return;
  ddp_->set_sync(boundary);  // no_sync on the micro-steps before the boundary
  ddp_->begin_backward();
}

void Stage0::end_backward() {
  if (ddp_) ddp_->end_backward();
}

void Stage0::reduce_gradients() {
  if (!ddp_) return;
  ddp_->set_sync(true);
  ddp_->finish();  // waits for the bucket all-reduces, writes the averages into .grad
}

// ---- compute: every rank updates all parameters with the same averaged gradients ----

double Stage0::step(float lr, double max_norm) {
  std::vector<Tensor> params = optimizer_->parameters();
  const double norm = max_norm > 0 ? optim::clip_grad_norm(params, max_norm)
                                   : std::sqrt(optim::grad_sum_squares(params));
  optimizer_->set_lr(lr);
  optimizer_->step();
  optimizer_->zero_grad();
  return norm;
}

void Stage0::load_parameters(const nn::NamedTensors& whole) { model_->load_state_dict(whole, /*strict=*/true); }

ModelStateBytes Stage0::model_state_bytes() const {
  ModelStateBytes b;
  for (const Tensor& p : model_->parameters()) {
    b.param += static_cast<std::int64_t>(p.nbytes());
    if (p.grad().defined()) b.grad += static_cast<std::int64_t>(p.grad().nbytes());
  }
  b.optim = optimizer_->state_bytes();
  return b;
}

}  // namespace minitorch::zero
