#include "zero/stage3.h"

#include <algorithm>
#include <string>
#include <utility>

#include "nn/parameter_names.h"

namespace minitorch::zero {

namespace {

/// The persistent tensors (indices into `params`, in order of use) in reverse order of use, at most
/// `bucket_elements` elements per bucket (a bigger tensor gets a bucket of its own).
std::vector<std::vector<std::size_t>> persistent_buckets(const nn::NamedTensors& params,
                                                         const std::vector<std::size_t>& persistent,
                                                         std::int64_t bucket_elements) {
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<std::size_t> current;
  std::int64_t filled = 0;
  for (auto it = persistent.rbegin(); it != persistent.rend(); ++it) {
    const std::int64_t n = params[*it].second.numel();
    if (!current.empty() && filled + n > bucket_elements) {
      buckets.push_back(std::move(current));
      current.clear();
      filled = 0;
    }
    current.push_back(*it);
    filled += n;
  }
  if (!current.empty()) buckets.push_back(std::move(current));
  return buckets;
}

}  // namespace

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
  auto add_bucket = [&](std::vector<std::size_t> members, std::string name, bool is_persistent) {
    plan.buckets.push_back(std::move(members));
    plan.names.push_back(std::move(name));
    plan.persistent.push_back(is_persistent);
  };
  auto add_unit = [&](std::vector<std::size_t> members, std::string name) -> std::ptrdiff_t {
    if (members.empty()) return -1;  // every parameter of it persistent
    plan.units.push_back(plan.buckets.size());
    add_bucket(std::move(members), std::move(name), false);
    return static_cast<std::ptrdiff_t>(plan.units.size()) - 1;
  };
  plan.has_outer = add_unit(std::move(outer), "outer") == 0;
  for (std::size_t k = 0; k < n_blocks; ++k)
    plan.block_pos.push_back(add_unit(std::move(per_block[k]), "h." + std::to_string(k)));
  std::size_t n_persistent = 0;
  for (auto& bucket : persistent_buckets(params, persistent, config.zero.reduce_bucket_size))
    add_bucket(std::move(bucket), "persistent " + std::to_string(n_persistent++), true);
  return plan;
}

Stage3::Stage3(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group)
    : Stage3(model, config, group, plan_units(model->named_parameters(), model->blocks.size(), config)) {}

Stage3::Stage3(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group, const UnitPlan& plan)
    : ShardedStrategy(model, group, Partition(model->named_parameters(), plan.buckets, group.rank(), group.size())),
      has_outer_(plan.has_outer),
      prefetch_elements_(config.zero.stage3_prefetch_bucket_size) {
  bucket_names_ = plan.names;
  reductions_.resize(partition_.buckets().size());
  // Every rank starts from rank 0's weights, then keeps only its shard of each unit (plan_units puts the
  // units' buckets first: the buffers are allocated in bucket order).
  for (auto& [name, p] : model_->named_parameters()) {
    Tensor t = p;
    group_.broadcast(t, 0);
  }
  open_swap(config);  // NVMe: the rank's swap space, before the units put their shards there
  const std::string& param_device = config.zero.offload_param.device;
  const ShardHome home = param_device == "nvme" ? ShardHome::disk : param_device == "cpu" ? ShardHome::host : ShardHome::device;
  const Unit::Shared shared{partition_, group_, *this, progress_, home, swap_.get()};
  units_.reserve(plan.units.size());
  for (std::size_t b : plan.units) units_.emplace_back(plan.names[b], b, shared);
  for (std::size_t b = 0; b < plan.buckets.size(); ++b)
    if (plan.persistent[b]) partition_.adopt_parameters(b);  // whole on every rank
  partition_.allocate_gradient_shards(config.zero.contiguous_gradients);
  hook_units(plan);
  // post_backward: the gradient hooks count a unit's gradients down (two reductions in flight at most).
  start_reducer_and_optimizer(
      config, [this](std::size_t b) { return post_backward(b); },
      [this](std::size_t b) {
        frame_releases();  // releases from earlier hooks first, while b's shard still shows "reducing"
        reductions_[b].finish(partition_, b);
        reduced_frame(*this, partition_, b, bucket_names_[b], progress_, /*local_freed=*/true);
      });
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) optimizer_->set_gather_after_step(b, plan.persistent[b]);
}

Stage3::~Stage3() {
  reducer_.reset();  // waits for reductions in flight; each unit waits for its gather in flight
}

void Stage3::hook_units(const UnitPlan& plan) {
  for (Unit& unit : units_) forward_order_.push_back(&unit);
  // Backward meets the units in reverse, except the outer unit: the head's backward comes first.
  backward_order_.assign(forward_order_.rbegin(), forward_order_.rend());
  if (has_outer_) std::rotate(backward_order_.rbegin(), backward_order_.rbegin() + 1, backward_order_.rend());
  // The module hooks drive the units, in FSDP2's words: pre_forward gathers a unit (and prefetches the next),
  // post_forward releases it, pre_backward gathers it again for its backward, and post_backward, when its
  // last gradient is final, reduce-scatters its gradients and releases it. The outer unit is the whole model's
  // (its forward, and the head's backward first); each block is a unit of its own.
  hooks_.push_back(model_->register_pre_forward_hook([this](nn::Module&, std::span<const Tensor>) {
    if (has_outer_) pre_forward(0);
    else prefetch(forward_order_);
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
}

const Unit* Stage3::unit_of(std::size_t b) const {
  for (const Unit& unit : units_)
    if (unit.bucket_index() == b) return &unit;
  return nullptr;
}

Unit* Stage3::unit_of(std::size_t b) { return const_cast<Unit*>(std::as_const(*this).unit_of(b)); }

// ---- the unit hooks: when each unit changes state (zero/unit.h: how) ----

void Stage3::pre_forward(std::size_t pos) {
  units_[pos].ensure_gathered();
  // Inside backward this forward is activation checkpointing's recompute of one unit: the units after it in
  // forward order have had their backward already, so a prefetch would gather them for nothing and hold
  // them until end_backward (up to the whole model); pre_backward prefetches in backward order instead.
  if (!progress_.in_backward) prefetch(std::span(forward_order_).subspan(pos + 1));
}

void Stage3::post_forward(std::size_t pos) { units_[pos].release(); }

void Stage3::pre_backward(std::size_t pos) {
  frame_releases();  // the unit whose backward just ended, before this one's gather
  units_[pos].ensure_gathered();
  prefetch(std::span(backward_order_).subspan(backward_position(pos) + 1));
}

std::unique_ptr<dist::Work> Stage3::post_backward(std::size_t b) {
  auto work = reduce(b);
  // No node of this backward reads the unit any more. Its frame comes later (frame_releases): inside the
  // gradient hook the autograd engine still holds the gradient it just made, memory no buffer of ours
  // accounts for, so a frame now would not agree with the allocator.
  if (Unit* unit = unit_of(b); unit && unit->state() != Unit::State::sharded) {
    unit->release(/*framed=*/false);
    unframed_releases_.push_back(unit);
  }
  return work;
}

void Stage3::prefetch(std::span<Unit* const> next) {
  std::int64_t ahead = 0;
  for (Unit* unit : next) {
    ahead += unit->numel();
    if (ahead > prefetch_elements_) break;
    if (unit->state() == Unit::State::sharded) {
      unit->gather_async();
      ++prefetched_;
    }
  }
}

void Stage3::frame_releases() {
  for (const Unit* unit : unframed_releases_) unit->released_frame();
  unframed_releases_.clear();
}

std::size_t Stage3::backward_position(std::size_t pos) const {
  // Backward meets the blocks in reverse; the outer unit, whose head's backward runs first, stays first.
  if (has_outer_ && pos == 0) return 0;
  return units_.size() - pos - (has_outer_ ? 0 : 1);
}

void Stage3::gather_all() {
  for (Unit& unit : units_) unit.ensure_gathered();
}

void Stage3::release_all() {
  for (Unit& unit : units_) unit.release();
}

void Stage3::end_backward() {
  frame_releases();  // the backward has returned: the engine holds no gradient any more
  reducer_->end_backward();  // the buckets whose hooks did not fire: released by post_backward, framed next
  frame_releases();
  release_all();  // a unit this backward did not reach
  progress_.in_backward = false;
}

trace::FlatSpace Stage3::flat_space() const {
  trace::FlatSpace space = ShardedStrategy::flat_space();
  for (std::size_t b = 0; b < space.buckets.size(); ++b) space.buckets[b].persistent = unit_of(b) == nullptr;
  return space;
}

// ---- read-outs: what this rank holds, for the frames and the run report (no computation) ----

void Stage3::paint_bucket(std::size_t b, trace::RankHoldings& h) const {
  paint_unit_bucket(partition_, b, unit_of(b), progress_, reductions_[b].grads, h);  // no unit: persistent, whole
}

ModelStateBytes Stage3::bucket_bytes(std::size_t b) const { return unit_bucket_bytes(partition_, b, unit_of(b)); }

}  // namespace minitorch::zero
