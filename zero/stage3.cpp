#include "zero/stage3.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include "minitorch/not_implemented.h"

namespace minitorch::zero {

UnitPlan plan_units(const nn::NamedTensors& params, std::size_t n_blocks, const Config& config) {
  std::vector<std::vector<std::size_t>> per_block(n_blocks);
  std::vector<std::size_t> outer, persistent;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, t] = params[i];
    if (t.numel() <= config.zero.stage3_param_persistence_threshold) {
      persistent.push_back(i);
      continue;
    }
    const std::string prefix = "transformer.h.";
    if (name.starts_with(prefix)) per_block.at(std::stoul(name.substr(prefix.size()))).push_back(i);
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

Stage3::Stage3(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group)
    : Stage3(model, config, group, plan_units(model->named_parameters(), model->blocks.size(), config)) {}

Stage3::Stage3(std::shared_ptr<nn::GPT> model, const Config& config, dist::ProcessGroup& group, const UnitPlan& plan)
    : model_(std::move(model)),
      group_(group),
      partition_(model_->named_parameters(), plan.buckets, group.rank(), group.size()),
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
  progress_.reduced.assign(B, false);
  for (std::size_t b = 0, persistent = 0; b < B; ++b) unit_names_.push_back(persistent_[b] ? "persistent " + std::to_string(persistent++) : "");
  for (std::size_t k = 0; k < model_->blocks.size(); ++k)
    if (plan.block_pos[k] >= 0) unit_names_[units_[static_cast<std::size_t>(plan.block_pos[k])]] = "h." + std::to_string(k);
  if (has_outer_) unit_names_[units_[0]] = "outer";

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

  // The module hooks drive the units: the outer unit around the whole model (its forward, and the
  // head's backward first), each block around its own.
  hooks_.push_back(model_->register_pre_forward_hook([this](nn::Module&, std::span<const Tensor>) {
    if (has_outer_) before(0, /*forward=*/true);
    else prefetch(units_, 0, /*including=*/true);
  }));
  if (has_outer_) {
    hooks_.push_back(model_->register_post_forward_hook(
        [this](nn::Module&, std::span<const Tensor>, const Tensor&) { release(units_[0]); }));
    hooks_.push_back(model_->register_pre_backward_hook([this](nn::Module&, const Tensor&) { before(0, false); }));
  }
  for (std::size_t k = 0; k < model_->blocks.size(); ++k) {
    if (plan.block_pos[k] < 0) continue;  // all of the block persistent
    const auto pos = static_cast<std::size_t>(plan.block_pos[k]);
    nn::Block& block = *model_->blocks[k];
    hooks_.push_back(block.register_pre_forward_hook([this, pos](nn::Module&, std::span<const Tensor>) { before(pos, true); }));
    hooks_.push_back(block.register_post_forward_hook(
        [this, pos](nn::Module&, std::span<const Tensor>, const Tensor&) { release(units_[pos]); }));
    hooks_.push_back(block.register_pre_backward_hook([this, pos](nn::Module&, const Tensor&) { before(pos, false); }));
  }
  // Gradients: a unit is reduced and released when its last gradient is final (two in flight at most).
  reducer_ = std::make_unique<BucketReducer>(
      partition_, config.zero.overlap_comm, /*max_in_flight=*/2,
      [this](std::size_t b) {
        auto work = reductions_[b].start(partition_, b, group_);
        // No node of this backward reads the unit any more. No frame: inside the gradient hook the
        // autograd engine still holds the gradient it just made, memory no buffer of ours accounts for.
        if (!persistent_[b]) release(b, /*framed=*/false);
        return work;
      },
      [this](std::size_t b) {
        reductions_[b].finish(partition_, b);
        reduced_frame(*this, partition_, b, unit_names_[b], progress_, true);
      });
  optimizer_ = std::make_unique<ShardedOptimizer>(partition_, config, group_);
  optimizer_->set_frame_source(this);
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
    throw std::logic_error("gather of " + unit_names_[b] + ": an all-gather of it is already in flight (a unit "
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
  frame(*this, [&] {
    const std::string& unit = unit_names_[b];
    return trace::FrameNote{progress_.in_backward ? "backward" : "forward", "all-gather " + unit,
                            "all-gather: every rank now holds all of " + unit + "'s parameters, for its " +
                                (progress_.in_backward ? "backward" : "forward"),
                            bucket_collective(partition_, b, "all_gather")};
  });
}

void Stage3::release(std::size_t b, bool framed) {
  if (persistent_[b] || state_[b] == UnitState::sharded) return;
  // BEGIN SOLUTION L07.3
  if (state_[b] == UnitState::gathering) ensure_gathered(b);  // a prefetch not used: finish it first
  partition_.release_gathered(b);
  state_[b] = UnitState::sharded;
  // END SOLUTION
  if (gathers_[b])  // the all-gather would go on writing into the freed buffer
    throw std::logic_error("release of " + unit_names_[b] + ": its all-gather is still in flight (finish an unused "
                           "prefetch before freeing the buffer it writes into)");
  if (!framed) return;
  frame(*this, [&] {
    return trace::FrameNote{progress_.in_backward ? "backward" : "forward", "release " + unit_names_[b],
                            "release: " + unit_names_[b] + "'s gathered parameters are freed; each rank keeps only "
                                "its own shard of them",
                            nullptr};
  });
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

void Stage3::before(std::size_t unit_pos, bool forward) {
  // The unit's position in the order this pass meets the units in.
  std::size_t pos = unit_pos;
  if (!forward) pos = has_outer_ && unit_pos == 0 ? 0 : units_.size() - unit_pos - (has_outer_ ? 0 : 1);
  const std::vector<std::size_t>& order = forward ? units_ : backward_order_;
  ensure_gathered(order[pos]);
  prefetch(order, pos, /*including=*/false);
}

void Stage3::gather_all() {
  for (std::size_t b : units_) ensure_gathered(b);
}

void Stage3::release_all() {
  for (std::size_t b : units_) release(b);
}

void Stage3::begin_backward(bool) {
  reducer_->begin_backward(/*reduce=*/true);
  progress_.in_backward = true;
}

void Stage3::end_backward() {
  reducer_->end_backward();
  for (std::size_t b : units_) release(b);  // a unit this backward did not reach
  progress_.in_backward = false;
}

StepResult Stage3::step(const StepRequest& r) {
  const StepResult result = optimizer_->step(r);
  progress_.clear();  // the gradient shards are zero again
  return result;
}

// ---- compute ----

trace::RankHoldings Stage3::holdings() const {
  trace::RankHoldings h;
  for (std::size_t b = 0; b < partition_.buckets().size(); ++b) {
    const ShardedBucket& bucket = partition_.buckets()[b];
    if (persistent_[b]) {
      h.params.paint(bucket.first, bucket.first + bucket.numel, "whole");
    } else {
      const auto [begin, end] = own_shard(partition_, b);
      h.params.paint(begin, end, "shard");
      // While gathering or gathered, the full buffer lies over the shard, which stays allocated.
      if (state_[b] != UnitState::sharded)
        h.params.paint(bucket.first, bucket.first + bucket.numel,
                       state_[b] == UnitState::gathered ? "gathered" : "gathering", trace::Overlay::separate_buffer);
    }
    paint_sharded_gradients(partition_, b, progress_, h.grads);
  }
  paint_optimizer_shard(partition_, optimizer(), h.optim);
  return h;
}

ModelStateBytes Stage3::model_state_bytes() const {
  ModelStateBytes bytes;
  for (std::size_t b = 0; b < partition_.buckets().size(); ++b) {
    const ShardedBucket& bucket = partition_.buckets()[b];
    // Persistent: the whole flat buffer. A unit: its shard, and its full buffer while gathered.
    bytes.param += static_cast<std::int64_t>(persistent_[b] ? bucket.params.flat().nbytes() : bucket.param_shard.nbytes());
    if (!persistent_[b] && bucket.params.numel() > 0) bytes.param += static_cast<std::int64_t>(bucket.params.flat().nbytes());
    bytes.grad += static_cast<std::int64_t>(bucket.grad_shard.nbytes());
  }
  bytes.optim = optimizer().state_bytes();
  return bytes;
}

}  // namespace minitorch::zero
