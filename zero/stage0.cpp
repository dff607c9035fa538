#include "zero/stage0.h"

#include <algorithm>

#include "optim/clip.h"
#include "zero/step_frames.h"
#include "zero/step_sequence.h"
#include "zero/tiled_step.h"

namespace minitorch::zero {

Stage0::Stage0(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup* group,
               const nn::NamedTensors& params)
    : model_(std::move(model)), whole_model_(params.size() == model_->named_parameters().size()) {
  if (group && group->size() > 1) {
    // Every rank starts from rank 0's weights (even if the seeds differ), then DDP hooks the grads.
    ddp_ = std::make_unique<dist::DistributedDataParallel>(params, *group, config.zero.reduce_bucket_size);
    ddp_->broadcast_parameters(0);
  }
  optimizer_ = make_adamw(params, config.adamw);
  if (ddp_) {
    for (const dist::Bucket& b : ddp_->buckets()) {
      trace::SpaceBucket& sb = space_.add_bucket("bucket " + std::to_string(space_.buckets.size()), b.buffer.numel());
      for (std::size_t i = 0; i < b.params.size(); ++i) {
        const FlatBuffer::Range r = b.buffer.slot(i);
        slots_.push_back({b.names[i], b.params[i], b.first + r.begin});
        sb.params.push_back({b.names[i], b.first + r.begin, b.first + r.end});
      }
    }
  } else {
    std::int64_t n = 0;
    for (const auto& [name, p] : params) n += p.numel();
    trace::SpaceBucket& sb = space_.add_bucket("model", n);
    std::int64_t at = 0;
    for (const auto& [name, p] : params) {
      slots_.push_back({name, p, at});
      sb.params.push_back({name, at, at + p.numel()});
      at += p.numel();
    }
  }
}

trace::FlatSpace Stage0::flat_space() const { return space_; }

trace::RankHoldings Stage0::holdings() const {
  trace::RankHoldings h;
  for (const Slot& s : slots_) {
    const std::int64_t end = s.begin + s.param.numel();
    h.params.paint(s.begin, end, "whole");
    if (s.param.grad().defined()) h.grads.paint(s.begin, end, reduced_ ? "reduced" : "accumulating");
    if (optimizer_->has_state(s.name)) h.optim.paint(s.begin, end, "whole");
  }
  return h;
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
  reduced_ = true;
  all_reduced_frame(*this, *ddp_, space_.numel);
}

// ---- compute: every rank updates all parameters with the same averaged gradients ----

StepResult Stage0::step(const StepRequest& r) {
  const std::vector<Tensor> params = optimizer_->parameters();
  return run_step(r, *optimizer_, {
    // Every rank holds the same averaged gradients: every rank finds the same norm and takes the same decision.
    .sum_squares = [&] {
      if (r.norm_excluded.empty()) return optim::grad_sum_squares(params);
      std::vector<Tensor> counted;  // a tensor-parallel rank's: without the replicated ones another rank counts
      for (const auto& group : optimizer_->param_groups())
        for (const auto& [name, p] : group.params)
          if (std::find(r.norm_excluded.begin(), r.norm_excluded.end(), name) == r.norm_excluded.end()) counted.push_back(p);
      return optim::grad_sum_squares(counted);
    },
    .update = [&](double clip) {
      update(params, clip, r.loss_scale);
      update_frame(*this, /*replicated=*/ddp_ != nullptr);
    },
    .zero_gradients = [&] {
      optimizer_->zero_grad();
      reduced_ = false;
    },
  });
}

void Stage0::update(const std::vector<Tensor>& params, double clip, double loss_scale) {
  if (loss_scale == 1) {
    if (clip < 1.0) optim::scale_grads(params, static_cast<float>(clip));
    optimizer_->step();
    return;
  }
  // fp16: unscale in f32 (an f16 gradient divided in place would underflow), one parameter per tile.
  std::int64_t largest = 1;
  for (const Tensor& p : params) largest = std::max(largest, p.numel());
  tiled_adamw_step(*optimizer_, static_cast<float>(clip / loss_scale), largest);
}

void Stage0::load_parameters(const nn::NamedTensors& whole) {
  if (whole_model_) return model_->load_state_dict(whole, /*strict=*/true);
  for (const Slot& s : slots_) {
    const auto it = std::find_if(whole.begin(), whole.end(), [&](const auto& kv) { return kv.first == s.name; });
    if (it == whole.end()) throw std::runtime_error("load_parameters: missing key '" + s.name + "'");
    Tensor p = s.param;
    p.copy_(it->second.to(p.dtype()));
  }
}

ModelStateBytes Stage0::model_state_bytes() const {
  ModelStateBytes b;
  for (const Slot& s : slots_) {
    const Tensor& p = s.param;
    b.param += static_cast<std::int64_t>(p.nbytes());
    if (p.grad().defined()) b.grad += static_cast<std::int64_t>(p.grad().nbytes());
  }
  b.optim = optimizer_->state_bytes();
  return b;
}

}  // namespace minitorch::zero
