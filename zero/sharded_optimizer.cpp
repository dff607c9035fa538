#include "zero/sharded_optimizer.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "minitorch/not_implemented.h"
#include "zero/step_frames.h"
#include "zero/step_sequence.h"
#include "zero/tiled_step.h"

namespace minitorch::zero {

ShardedOptimizer::ShardedOptimizer(Partition& partition, const StrategyConfig& config, dist::ProcessGroup& group,
                                   NvmeStore* swap)
    : partition_(partition),
      group_(group),
      swap_(swap),
      gather_after_step_(partition.buckets().size(), true),
      // DeepSpeed tiles the step by sub_group_size at stage 3 only; below it the shard is one tile.
      tile_elements_(config.zero.stage == 3 ? config.zero.sub_group_size : std::numeric_limits<std::int64_t>::max()) {
  const optim::AdamWOptions& opts = config.adamw;
  if (config.zero.offload_optimizer.on_nvme()) {  // ZeRO-Infinity: the states in this rank's swap files
    if (config.zero.stage != 3 || !swap_)
      throw std::invalid_argument("ShardedOptimizer: offload_optimizer \"nvme\" needs ZeRO stage 3 and the rank's "
                                  "swap space (stage " + std::to_string(config.zero.stage) + ")");
    // Pieces of shards that live on disk (offload_param "nvme"): their values are written to the shard's file.
    std::map<std::string, NvmeOptimizer::ParamFile> on_disk;
    for (const ShardPiece& piece : partition_.pieces()) {
      const ShardedBucket& b = partition_.buckets()[piece.bucket];
      if (b.home != ShardHome::disk) continue;
      on_disk[piece.name] = {shard_swap_file(piece.bucket),
                             partition_.offset_in_shard(piece) * static_cast<std::int64_t>(dtype_size(b.param_shard.dtype()))};
    }
    const OffloadConfig& o = config.zero.offload_optimizer;
    nvme_ = std::make_unique<NvmeOptimizer>(partition_.optimizer_groups(opts.lr, opts.weight_decay), opts, *swap_,
                                            NvmeOptimizer::Options{tile_elements_, o.pipeline_read, o.pipeline_write},
                                            on_disk);
    return;
  }
  if (config.zero.offload_optimizer.enabled()) {  // ZeRO-Offload: the same groups over host copies
    std::set<std::string> on_host;  // offload_param: the pieces of shards that live on the host already
    for (const ShardPiece& piece : partition_.pieces())
      if (partition_.buckets()[piece.bucket].home == ShardHome::host) on_host.insert(piece.name);
    offload_ = std::make_unique<OffloadOptimizer>(partition_.optimizer_groups(opts.lr, opts.weight_decay), opts, on_host);
    return;
  }
  // BEGIN SOLUTION L06.2
  adamw_ = std::make_unique<optim::AdamW>(partition_.optimizer_groups(opts.lr, opts.weight_decay), opts);
  // END SOLUTION
}

void ShardedOptimizer::set_frame_source(const GradientStrategy* strategy) {
  frame_source_ = strategy;
  if (!nvme_ || !strategy) return;
  std::size_t most = 0;  // every rank's frames pair up: as many tile frames as the rank with the most tiles
  for (int r = 0; r < partition_.world(); ++r) most = std::max(most, NvmeOptimizer::tiles_of_rank(partition_, r, tile_elements_));
  if (NvmeOptimizer::tiles_of_rank(partition_, partition_.rank(), tile_elements_) != nvme_->tiles())
    throw std::logic_error("ShardedOptimizer: NvmeOptimizer::tiles_of_rank disagrees with the optimizer's own tiles");
  nvme_->set_tile_hook([this, most](std::size_t k) { tile_frame(*frame_source_, k, most); }, most);
}

// ---- checkpoints: the optimizer state of my pieces ----

nn::NamedTensors ShardedOptimizer::state_tensors() const {
  return offload_ ? offload_->state_tensors() : nvme_ ? nvme_->state_tensors() : adamw_->state_tensors();
}

void ShardedOptimizer::load_state(const nn::NamedTensors& state, std::int64_t steps) {
  if (offload_) offload_->load_state(state, steps);
  else if (nvme_) nvme_->load_state(state, steps);
  else adamw_->load_state(state, steps);
}

// ---- compute: the update of this rank's pieces ----

StepResult ShardedOptimizer::step(const StepRequest& r) {
  if (offload_) offload_->copy_gradients_down();  // ZeRO-Offload: the reduced gradients go to the host's AdamW
  // BEGIN SOLUTION L06.2
  return run_step(r, adamw(), {
    // The global norm from one scalar: Σ g² over every rank's shard (padding is zero and unowned).
    .sum_squares = [&] {
      Tensor sum_sq = Tensor::full({1}, static_cast<float>(tiled_sum_squares(adamw(), tile_elements_, r.norm_excluded)), DType::f32,
                                   group_.device());
      group_.all_reduce(sum_sq, dist::ReduceOp::sum);
      return static_cast<double>(sum_sq.item());
    },
    .update = [&](double clip) {
      const auto grad_multiplier = static_cast<float>(clip / r.loss_scale);
      if (offload_) offload_->update(grad_multiplier, tile_elements_);  // on the host, the values back up
      else if (nvme_) nvme_->update(grad_multiplier);  // tile by tile through the swap files
      else tiled_adamw_step(*adamw_, grad_multiplier, tile_elements_);
      if (frame_source_) sharded_update_frame(*frame_source_, group_);
      gather_parameters();
    },
    .zero_gradients = [&] { partition_.zero_gradients(); },
  });
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
    const Tensor values = it->second.reshape({it->second.numel()}).narrow(0, piece.param_offset, piece.range.size());
    const ShardedBucket& b = partition_.buckets()[piece.bucket];
    if (b.home != ShardHome::disk) {
      views[i].second.copy_(values);
      continue;
    }
    Tensor staged = Tensor::empty({piece.range.size()}, b.param_shard.dtype(), Device::cpu());  // on disk: its file
    staged.copy_(values);
    const auto width = static_cast<std::int64_t>(dtype_size(staged.dtype()));
    swap_->write(shard_swap_file(piece.bucket), partition_.offset_in_shard(piece) * width,
                 staged.raw_data(), piece.range.size() * width);
  }
  if (offload_) offload_->refresh_masters();
  if (nvme_) nvme_->refresh_masters();
  gather_parameters();
}

nn::NamedTensors ShardedOptimizer::readable_pieces() const {
  nn::NamedTensors pieces = partition_.piece_params();
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const ShardPiece& piece = partition_.pieces()[i];
    const ShardedBucket& b = partition_.buckets()[piece.bucket];
    if (b.home != ShardHome::disk) continue;
    Tensor values = Tensor::empty({piece.range.size()}, b.param_shard.dtype(), Device::cpu());  // read back from disk
    const auto width = static_cast<std::int64_t>(dtype_size(values.dtype()));
    swap_->read(shard_swap_file(piece.bucket), partition_.offset_in_shard(piece) * width,
                values.raw_data(), piece.range.size() * width);
    pieces[i].second = values;
  }
  return pieces;
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
