#include "zero/stage3.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "minitorch/not_implemented.h"
#include "nn/parameter_names.h"

namespace minitorch::zero {

UnitPlan plan_units(const nn::NamedTensors& params, std::size_t n_blocks, const StrategyConfig& config) {
  std::vector<std::vector<std::size_t>> per_block(n_blocks);
  std::vector<std::size_t> outer, persistent;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, t] = params[i];
    if (t.numel() <= config.zero.stage3_param_persistence_threshold) {
      persistent.push_back(i);
      continue;
    }
    const nn::ParameterPlace place = nn::parameter_place(name);
    if (place.part == nn::ModelPart::block) per_block.at(static_cast<std::size_t>(place.block)).push_back(i);
    else outer.push_back(i);
  }
  UnitPlan plan;
  auto add_unit = [&](std::vector<std::size_t> members) -> std::ptrdiff_t {
    if (members.empty()) return -1;  // every parameter of it persistent
    plan.units.push_back(plan.buckets.size());
    plan.buckets.push_back(std::move(members));
    plan.persistent.push_back(false);
    return static_cast<std::ptrdiff_t>(plan.units.size()) - 1;
  };
  plan.has_outer = add_unit(outer) == 0;
  for (auto& block : per_block) plan.block_pos.push_back(add_unit(block));
  // Persistent parameters: reverse order of use, at most reduce_bucket_size elements per bucket.
  std::vector<std::size_t> current;
  std::int64_t filled = 0;
  for (auto it = persistent.rbegin(); it != persistent.rend(); ++it) {
    const std::int64_t n = params[*it].second.numel();
    if (!current.empty() && filled + n > config.zero.reduce_bucket_size) {
      plan.buckets.push_back(std::move(current));
      plan.persistent.push_back(true);
      current.clear();
      filled = 0;
    }
    current.push_back(*it);
    filled += n;
  }
  if (!current.empty()) {
    plan.buckets.push_back(std::move(current));
    plan.persistent.push_back(true);
  }
  return plan;
}

Stage3::Stage3(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group)
    : Stage3(model, config, group, plan_units(model->named_parameters(), model->blocks.size(), config)) {}

Stage3::Stage3(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group, const UnitPlan& plan)
    : ShardedStrategy(model, group, Partition(model->named_parameters(), plan.buckets, group.rank(), group.size())),
      prefetch_elements_(config.zero.stage3_prefetch_bucket_size) {
  units_ = plan.units;
  persistent_ = plan.persistent;
  has_outer_ = plan.has_outer;
  // Backward meets the units in reverse, except the outer unit: the head's backward comes first.
  backward_order_.assign(units_.rbegin(), units_.rend());
  if (has_outer_) std::rotate(backward_order_.rbegin(), backward_order_.rbegin() + 1, backward_order_.rend());
  const std::size_t B = partition_.buckets().size();
  state_.assign(B, UnitState::gathered);
  gathers_.resize(B);
  reductions_.resize(B);
  for (std::size_t b = 0, persistent = 0; b < B; ++b)
    bucket_names_[b] = persistent_[b] ? "persistent " + std::to_string(persistent++) : "";
  for (std::size_t k = 0; k < model_->blocks.size(); ++k)
    if (plan.block_pos[k] >= 0) bucket_names_[units_[static_cast<std::size_t>(plan.block_pos[k])]] = "h." + std::to_string(k);
  if (has_outer_) bucket_names_[units_[0]] = "outer";

  // Every rank starts from rank 0's weights, then keeps only its shard of each unit.
  for (auto& [name, p] : model_->named_parameters()) {
    Tensor t = p;
    group_.broadcast(t, 0);
  }
  for (std::size_t b = 0; b < B; ++b) {
    if (persistent_[b]) {
      partition_.adopt_parameters(b);
    } else {
      partition_.shard_parameters(b);
      state_[b] = UnitState::sharded;
    }
  }
  partition_.allocate_gradient_shards(config.zero.contiguous_gradients);

  // The module hooks drive the units, in FSDP2's words: pre_forward gathers a unit (and prefetches the next),
  // post_forward releases it, pre_backward gathers it again for its backward, and post_backward, when its
  // last gradient is final, reduce-scatters its gradients and releases it. The outer unit is the whole model's
  // (its forward, and the head's backward first); each block is a unit of its own.
  hooks_.push_back(model_->register_pre_forward_hook([this](nn::Module&, std::span<const Tensor>) {
    if (has_outer_) pre_forward(0);
    else prefetch(units_, 0, /*including=*/true);
  }));
  if (has_outer_) {
    hooks_.push_back(model_->register_post_forward_hook(
        [this](nn::Module&, std::span<const Tensor>, const Tensor&) { post_forward(0); }));
    hooks_.push_back(model_->register_pre_backward_hook([this](nn::Module&, const Tensor&) { pre_backward(0); }));
  }
  for (std::size_t k = 0; k < model_->blocks.size(); ++k) {
    if (plan.block_pos[k] < 0) continue;  // all of the block persistent
    const auto pos = static_cast<std::size_t>(plan.block_pos[k]);
    nn::Block& block = *model_->blocks[k];
    hooks_.push_back(block.register_pre_forward_hook([this, pos](nn::Module&, std::span<const Tensor>) { pre_forward(pos); }));
    hooks_.push_back(block.register_post_forward_hook(
        [this, pos](nn::Module&, std::span<const Tensor>, const Tensor&) { post_forward(pos); }));
    hooks_.push_back(block.register_pre_backward_hook([this, pos](nn::Module&, const Tensor&) { pre_backward(pos); }));
  }
  // post_backward: the gradient hooks count a unit's gradients down (two reductions in flight at most).
  start_reducer_and_optimizer(
      config, [this](std::size_t b) { return post_backward(b); },
      [this](std::size_t b) {
        frame_releases();  // releases from earlier hooks first, while b's shard still shows "reducing"
        reductions_[b].finish(partition_, b);
        reduced_frame(*this, partition_, b, bucket_names_[b], progress_, /*local_freed=*/true);
      });
  for (std::size_t b = 0; b < B; ++b) optimizer_->set_gather_after_step(b, persistent_[b]);
}

Stage3::~Stage3() {
  reducer_.reset();  // waits for reductions in flight
  for (auto& g : gathers_)
    if (g) g->wait();
}

// ---- communication: sharded → gathering → gathered → sharded ----

void Stage3::gather_async(std::size_t b) {
  if (state_[b] != UnitState::sharded) return;
  if (gathers_[b])  // a second all-gather into a new buffer while the first still writes into the old one
    throw std::logic_error("gather of " + bucket_names_[b] + ": an all-gather of it is already in flight (a unit "
                           "whose gather has started is gathering, not sharded)");
  // BEGIN SOLUTION L07.1
  ShardedBucket& bucket = partition_.buckets()[b];
  bucket.params = FlatBuffer(partition_.shapes(bucket), bucket.param_shard.dtype(), group_.size(), MemTag::param,
                             bucket.param_shard.device());
  Tensor full = bucket.params.flat();
  events::FlatRange what("zero unit", bucket.first, bucket.first + bucket.numel);  // for the traces
  gathers_[b] = group_.all_gather_into_async(full, bucket.param_shard);
  state_[b] = UnitState::gathering;
  // END SOLUTION
}

void Stage3::ensure_gathered(std::size_t b) {
  if (state_[b] == UnitState::gathered) return;
  // BEGIN SOLUTION L07.2
  gather_async(b);
  gathers_[b]->wait();
  gathers_[b].reset();
  partition_.attach_gathered(b);
  state_[b] = UnitState::gathered;
  // END SOLUTION
  unit_gathered_frame(*this, partition_, b, bucket_names_[b], progress_.in_backward);
}

void Stage3::release(std::size_t b, bool framed) {
  if (persistent_[b] || state_[b] == UnitState::sharded) return;
  // BEGIN SOLUTION L07.3
  if (state_[b] == UnitState::gathering) ensure_gathered(b);  // a prefetch not used: finish it first
  partition_.release_gathered(b);
  state_[b] = UnitState::sharded;
  // END SOLUTION
  if (gathers_[b])  // the all-gather would go on writing into the freed buffer
    throw std::logic_error("release of " + bucket_names_[b] + ": its all-gather is still in flight (finish an unused "
                           "prefetch before freeing the buffer it writes into)");
  if (framed) unit_released_frame(*this, bucket_names_[b], progress_.in_backward);
}

void Stage3::frame_releases() {
  for (std::size_t b : unframed_releases_) unit_released_frame(*this, bucket_names_[b], progress_.in_backward);
  unframed_releases_.clear();
}

void Stage3::prefetch(const std::vector<std::size_t>& order, std::size_t pos, bool including) {
  std::int64_t ahead = 0;
  for (std::size_t i = including ? pos : pos + 1; i < order.size(); ++i) {
    ahead += partition_.buckets()[order[i]].numel;
    if (ahead > prefetch_elements_) break;
    if (state_[order[i]] == UnitState::sharded) {
      gather_async(order[i]);
      ++prefetched_;
    }
  }
}

// ---- the unit hooks: when each transition runs ----

void Stage3::pre_forward(std::size_t pos) {
  ensure_gathered(units_[pos]);
  // Inside backward this forward is activation checkpointing's recompute of one unit: the units after it in
  // forward order have had their backward already, so a prefetch would gather them for nothing and hold
  // them until end_backward (up to the whole model); pre_backward prefetches in backward order instead.
  if (!progress_.in_backward) prefetch(units_, pos, /*including=*/false);
}

void Stage3::post_forward(std::size_t pos) { release(units_[pos]); }

void Stage3::pre_backward(std::size_t pos) {
  frame_releases();  // the unit whose backward just ended, before this one's gather
  const std::size_t at = backward_position(pos);
  ensure_gathered(backward_order_[at]);
  prefetch(backward_order_, at, /*including=*/false);
}

std::unique_ptr<dist::Work> Stage3::post_backward(std::size_t b) {
  auto work = reductions_[b].start(partition_, b, group_);
  // No node of this backward reads the unit any more. Its frame comes later (frame_releases): inside the
  // gradient hook the autograd engine still holds the gradient it just made, memory no buffer of ours
  // accounts for, so a frame now would not agree with the allocator.
  if (!persistent_[b] && state_[b] != UnitState::sharded) {
    release(b, /*framed=*/false);
    unframed_releases_.push_back(b);
  }
  return work;
}

std::size_t Stage3::backward_position(std::size_t pos) const {
  // Backward meets the blocks in reverse; the outer unit, whose head's backward runs first, stays first.
  if (has_outer_ && pos == 0) return 0;
  return units_.size() - pos - (has_outer_ ? 0 : 1);
}

void Stage3::gather_all() {
  for (std::size_t b : units_) ensure_gathered(b);
}

void Stage3::release_all() {
  for (std::size_t b : units_) release(b);
}

void Stage3::end_backward() {
  frame_releases();  // the backward has returned: the engine holds no gradient any more
  reducer_->end_backward();  // the buckets whose hooks did not fire: released by post_backward, framed next
  frame_releases();
  for (std::size_t b : units_) release(b);  // a unit this backward did not reach
  progress_.in_backward = false;
}

trace::FlatSpace Stage3::flat_space() const {
  trace::FlatSpace space = ShardedStrategy::flat_space();
  for (std::size_t b = 0; b < space.buckets.size(); ++b) space.buckets[b].persistent = persistent_[b];
  return space;
}

// ---- read-outs: what this rank holds, for the frames and the run report (no computation) ----

void Stage3::paint_bucket(std::size_t b, trace::RankHoldings& h) const {
  const ShardedBucket& bucket = partition_.buckets()[b];
  if (persistent_[b]) {
    h.params.paint(bucket.first, bucket.first + bucket.numel, "whole");
  } else {
    const auto [begin, end] = own_shard(partition_, b);
    h.params.paint(begin, end, "shard");
    // While gathering or gathered, the full buffer lies over the shard, which stays allocated.
    if (state_[b] != UnitState::sharded)
      h.params.paint(bucket.first, bucket.first + bucket.numel, state_[b] == UnitState::gathered ? "gathered" : "gathering",
                     trace::Overlay::separate_buffer);
  }
  paint_sharded_gradients(partition_, b, progress_, h.grads);
}

ModelStateBytes Stage3::bucket_bytes(std::size_t b) const {
  const ShardedBucket& bucket = partition_.buckets()[b];
  // Persistent: the whole flat buffer. A unit: its shard, and its full buffer while gathered.
  ModelStateBytes bytes;
  bytes.param = static_cast<std::int64_t>(persistent_[b] ? bucket.params.flat().nbytes() : bucket.param_shard.nbytes());
  if (!persistent_[b] && bucket.params.numel() > 0) bytes.param += static_cast<std::int64_t>(bucket.params.flat().nbytes());
  bytes.grad = static_cast<std::int64_t>(bucket.grad_shard.nbytes());
  return bytes;
}

}  // namespace minitorch::zero
