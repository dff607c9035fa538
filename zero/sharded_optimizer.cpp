#include "zero/sharded_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "optim/clip.h"
#include "zero/step_frames.h"
#include "zero/tiled_step.h"
#include "minitorch/not_implemented.h"

namespace minitorch::zero {

ShardedOptimizer::ShardedOptimizer(Partition& partition, const StrategyConfig& config, dist::ProcessGroup& group)
    : partition_(partition),
      group_(group),
      gather_after_step_(partition.buckets().size(), true),
      // DeepSpeed tiles the step by sub_group_size at stage 3 only; below it the shard is one tile.
      tile_elements_(config.zero.stage == 3 ? config.zero.sub_group_size : std::numeric_limits<std::int64_t>::max()) {
  const optim::AdamWOptions& opts = config.adamw;
  if (config.zero.offload_optimizer.enabled()) {
    offloaded_ = true;
    // ZeRO-Offload: the same groups over host copies. AdamW allocates m, v beside its parameters: the host.
    std::vector<optim::ParamGroup> groups = partition_.optimizer_groups(opts.lr, opts.weight_decay);
    std::int64_t total = 0;
    for (const auto& g : groups)
      for (const auto& [name, piece] : g.params) total += piece.numel();
    const Device host = Device::cpu();
    DType grad_dtype = DType::f32, param_dtype = DType::f32;
    for (const auto& g : groups)
      for (const auto& [name, piece] : g.params) grad_dtype = piece.grad().dtype(), param_dtype = piece.dtype();
    {
      TagScope scope(MemTag::grad);
      host_grads_ = Tensor::zeros({total}, grad_dtype, host);
    }
    if (param_dtype != DType::f32) {
      TagScope scope(MemTag::param);
      host_params16_ = Tensor::zeros({total}, param_dtype, host);
    }
    std::int64_t offset = 0;
    for (auto& g : groups)
      for (auto& [name, piece] : g.params) {
        device_pieces_.emplace_back(name, piece);
        device_grads_.push_back(piece.grad());
        Tensor master;
        {
          TagScope scope(MemTag::optim);  // the f32 master: optimizer state, on the host
          master = Tensor::empty(piece.shape(), DType::f32, host);
        }
        master.set_grad(host_grads_.narrow(0, offset, piece.numel()));
        offset += piece.numel();
        masters_.push_back(master);
        piece = master;  // the host AdamW's parameter
      }
    refresh_masters();
    adamw_ = std::make_unique<optim::AdamW>(std::move(groups), opts);
    std::map<std::string, Tensor> copies;  // 16-bit training: the step writes the rounded shard as it goes
    if (host_params16_.defined())
      for (std::size_t i = 0, at = 0; i < masters_.size(); at += static_cast<std::size_t>(masters_[i].numel()), ++i)
        copies[device_pieces_[i].first] = host_params16_.narrow(0, static_cast<std::int64_t>(at), masters_[i].numel());
    adamw_->step_on_host(std::move(copies));
    return;
  }
  // BEGIN SOLUTION L06.2
  adamw_ = std::make_unique<optim::AdamW>(partition_.optimizer_groups(opts.lr, opts.weight_decay), opts);
  // END SOLUTION
}

// ---- ZeRO-Offload: the copies between the device's pieces and the host's ----

void ShardedOptimizer::refresh_masters() {
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    TagScope scope(MemTag::optim_temp);  // a 16-bit piece widens through a temporary
    masters_[i].copy_(device_pieces_[i].second);
  }
}

void ShardedOptimizer::copy_gradients_down() {
  // BEGIN SOLUTION L10.1
  std::int64_t offset = 0;
  for (const Tensor& g : device_grads_) {  // G bytes per element, straight into the staging (no temporary)
    Tensor dst = host_grads_.narrow(0, offset, g.numel());
    dst.copy_(g);
    offset += g.numel();
  }
  // END SOLUTION
}

void ShardedOptimizer::copy_parameters_up() {
  // BEGIN SOLUTION L10.1
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    Tensor& piece = device_pieces_[i].second;
    if (host_params16_.defined()) {  // the step wrote the rounded values: move P = 2 bytes per element
      piece.copy_(host_params16_.narrow(0, offset, piece.numel()));
    } else {
      piece.copy_(masters_[i]);
    }
    offset += piece.numel();
  }
  // END SOLUTION
}

nn::NamedTensors ShardedOptimizer::state_tensors() const {
  nn::NamedTensors state = adamw_->state_tensors();
  if (offloaded_ && host_params16_.defined())
    for (std::size_t i = 0; i < masters_.size(); ++i)
      if (adamw_->has_state(device_pieces_[i].first)) state.emplace_back("master." + device_pieces_[i].first, masters_[i]);
  return state;
}

void ShardedOptimizer::load_state(const nn::NamedTensors& state, std::int64_t steps) {
  if (!offloaded_) return adamw_->load_state(state, steps);
  refresh_masters();  // the parameters were loaded first: an f32 master is the parameter itself
  nn::NamedTensors rest;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < device_pieces_.size(); ++i) index[device_pieces_[i].first] = i;
  for (const auto& [key, t] : state) {
    auto it = key.starts_with("master.") ? index.find(key.substr(7)) : index.end();
    if (it == index.end()) {
      rest.emplace_back(key, t);
      continue;
    }
    if (!host_params16_.defined())
      throw std::runtime_error("load_state: unexpected key '" + key + "': parameter is f32, it has no master");
    masters_[it->second].copy_(t.reshape({t.numel()}));
  }
  adamw_->load_state(rest, steps);
}

// ---- compute: the update of this rank's pieces ----

StepResult ShardedOptimizer::step(const StepRequest& r) {
  if (offloaded_) copy_gradients_down();  // ZeRO-Offload: the reduced gradients go to the host's AdamW
  // BEGIN SOLUTION L06.2
  // The global norm from one scalar: Σ g² over every rank's shard (padding is zero and unowned).
  // Every rank gets the same sum, so every rank takes the same overflow decision.
  Tensor sum_sq = Tensor::full({1}, static_cast<float>(tiled_sum_squares(*adamw_, tile_elements_)), DType::f32, group_.device());
  group_.all_reduce(sum_sq, dist::ReduceOp::sum);
  const double norm = std::sqrt(sum_over_pipeline(r, sum_sq.item())) / r.loss_scale;
  adamw_->set_lr(r.lr);  // also on a skipped step: lr() reports the rate this update would have used
  if (!std::isfinite(norm) && r.skip_on_overflow) {  // fp16 overflow: nothing changes but the gradients
    partition_.zero_gradients();
    return {norm, true};
  }
  const double coef = r.max_norm > 0 ? optim::clip_coefficient(norm, r.max_norm) : 1.0;
  {
    std::optional<events::Span> on_host;  // ZeRO-Offload: the step runs on the host (its own trace thread)
    if (offloaded_) on_host.emplace(events::Category::compute, "host_optimizer_step");
    tiled_adamw_step(*adamw_, static_cast<float>(coef / r.loss_scale), tile_elements_);
  }
  if (offloaded_) copy_parameters_up();  // ZeRO-Offload: the updated values back to the device's pieces
  if (frame_source_) sharded_update_frame(*frame_source_, group_);
  gather_parameters();
  partition_.zero_gradients();
  return {norm, false};
  // END SOLUTION
}

// ---- communication: the updated shards back to every rank ----

void adopt_parameters_from_rank0(Partition& partition, dist::ProcessGroup& group) {
  for (std::size_t b = 0; b < partition.buckets().size(); ++b) {
    partition.adopt_parameters(b);
    Tensor flat = partition.buckets()[b].params.flat();
    group.broadcast(flat, 0);  // one broadcast per bucket
  }
}

void ShardedOptimizer::load_parameters(const nn::NamedTensors& whole) {
  std::map<std::string, Tensor> by_name(whole.begin(), whole.end());
  nn::NamedTensors views = partition_.piece_params();  // (b - a) views of my shards, piece order
  for (std::size_t i = 0; i < views.size(); ++i) {
    const ShardPiece& piece = partition_.pieces()[i];
    const std::string& name = partition_.params()[piece.param].first;
    auto it = by_name.find(name);
    if (it == by_name.end()) throw std::runtime_error("ShardedOptimizer::load_parameters: no values for '" + name + "'");
    // whole[a:b] of the flattened parameter -> this rank's piece
    views[i].second.copy_(it->second.reshape({it->second.numel()}).narrow(0, piece.param_offset, piece.range.size()));
  }
  if (offloaded_) refresh_masters();
  gather_parameters();
}

void ShardedOptimizer::gather_parameters() {
  std::vector<std::unique_ptr<dist::Work>> inflight;
  std::int64_t sent = 0, bytes = 0;
  for (std::size_t i = 0; i < partition_.buckets().size(); ++i) {
    if (!gather_after_step_[i]) continue;
    ShardedBucket& b = partition_.buckets()[i];
    Tensor full = b.params.flat();
    events::FlatRange what("zero bucket", b.first, b.first + b.numel);  // for the traces
    inflight.push_back(group_.all_gather_into_async(full, b.params.shard_view(partition_.rank())));
    const std::int64_t n = dist::all_gather_volume(b.numel, partition_.world(), partition_.rank());
    sent += n;
    bytes += n * static_cast<std::int64_t>(dtype_size(full.dtype()));
  }
  for (auto& w : inflight) w->wait();
  const bool all = std::find(gather_after_step_.begin(), gather_after_step_.end(), false) == gather_after_step_.end();
  if (frame_source_ && !inflight.empty())
    gathered_after_step_frame(*frame_source_, partition_, all, sent, bytes, group_.size());
}

}  // namespace minitorch::zero
