#include "zero/sharded_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
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
  // BEGIN SOLUTION L06.2
  adamw_ = std::make_unique<optim::AdamW>(partition_.optimizer_groups(opts.lr, opts.weight_decay), opts);
  // END SOLUTION
}

// ---- compute: the update of this rank's pieces ----

StepResult ShardedOptimizer::step(const StepRequest& r) {
  // BEGIN SOLUTION L06.2
  // The global norm from one scalar: Σ g² over every rank's shard (padding is zero and unowned).
  // Every rank gets the same sum, so every rank takes the same overflow decision.
  Tensor sum_sq = Tensor::full({1}, static_cast<float>(tiled_sum_squares(*adamw_, tile_elements_)));
  group_.all_reduce(sum_sq, dist::ReduceOp::sum);
  const double norm = std::sqrt(sum_over_pipeline(r, sum_sq.item())) / r.loss_scale;
  adamw_->set_lr(r.lr);  // also on a skipped step: lr() reports the rate this update would have used
  if (!std::isfinite(norm) && r.skip_on_overflow) {  // fp16 overflow: nothing changes but the gradients
    partition_.zero_gradients();
    return {norm, true};
  }
  const double coef = r.max_norm > 0 ? optim::clip_coefficient(norm, r.max_norm) : 1.0;
  tiled_adamw_step(*adamw_, static_cast<float>(coef / r.loss_scale), tile_elements_);
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
