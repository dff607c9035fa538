#include "gemini/gemini.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "gemini/eviction.h"
#include "minitorch/allocator.h"
#include "nn/parameter_names.h"
#include "trace/frames.h"

namespace minitorch::gemini {

namespace {

/// The ZeRO-3 settings the shared machinery runs with: Gemini's placement replaces DeepSpeed's offload sections
/// (the config refuses both together): the optimizer on the host when offload_optim_frac is 1.0.
zero::StrategyConfig chunk_strategy_config(zero::StrategyConfig config, const GeminiLayout& layout) {
  config.zero.stage = 3;
  config.zero.offload_optimizer = {};
  config.zero.offload_param = {};
  if (layout.optim_on_host) config.zero.offload_optimizer.device = "cpu";
  return config;
}

}  // namespace

Gemini::Gemini(std::shared_ptr<nn::GPT> model, const zero::StrategyConfig& config, const GeminiConfig& gemini,
               dist::ProcessGroup& group)
    : Gemini(model, config, gemini, group, plan_gemini(model->named_parameters(), group.size(), gemini)) {}

Gemini::Gemini(std::shared_ptr<nn::GPT> model, const zero::StrategyConfig& config, const GeminiConfig& gemini,
               dist::ProcessGroup& group, GeminiLayout layout)
    : ShardedStrategy(model, group,
                      zero::Partition(model->named_parameters(), chunk_members(layout), group.rank(), group.size(),
                                      layout.allocated)),
      layout_(std::move(layout)),
      auto_(gemini.placement_policy == "auto"),
      capacity_(static_cast<double>(memory_capacity(partition_.device()))),
      warmup_ratio_(gemini.warmup_non_model_data_ratio),
      steady_ratio_(gemini.steady_cuda_cap_ratio),
      max_prefetch_(static_cast<std::size_t>(gemini.max_prefetch)) {
  const std::size_t n = layout_.size();
  bucket_names_.clear();  // the units' names in the frames and the errors
  for (std::size_t c = 0; c < n; ++c) bucket_names_.push_back("chunk " + std::to_string(c));
  reductions_.resize(n);
  for (auto& [name, p] : model_->named_parameters()) {  // every rank starts from rank 0's weights
    Tensor t = p;
    group_.broadcast(t, 0);
  }
  const nn::NamedTensors& params = partition_.params();
  std::vector<std::string> names;
  for (const auto& [name, t] : params) names.push_back(name);
  place_.resize(params.size());
  block_tensors_.resize(model_->blocks.size());
  for (std::size_t c = 0; c < n; ++c) {
    const PlannedChunk& chunk = layout_.chunks.chunks[c];
    states_.emplace_back(chunk, names);  // every tensor HOLD
    for (std::size_t s = 0; s < chunk.slots.size(); ++s) place_[chunk.slots[s].param] = {c, s};
  }
  for (std::size_t p : layout_.order) {
    const nn::ParameterPlace where = nn::parameter_place(params[p].first);
    if (where.part == nn::ModelPart::block) block_tensors_.at(static_cast<std::size_t>(where.block)).push_back(p);
    else outer_.push_back(p);
  }
  // Each sharded chunk keeps this rank's shard (on the device, or in host memory); a kept-gathered one is whole.
  const zero::Unit::Shared on_device{partition_, group_, *this, progress_, zero::ShardHome::device, nullptr};
  const zero::Unit::Shared on_host{partition_, group_, *this, progress_, zero::ShardHome::host, nullptr};
  for (std::size_t c = 0; c < n; ++c) {
    if (layout_.keep_gathered[c]) {
      partition_.adopt_parameters(c);
      units_.push_back(nullptr);
    } else {
      units_.push_back(std::make_unique<zero::Unit>(bucket_names_[c], c, layout_.param_on_host[c] ? on_host : on_device));
    }
  }
  if (auto_) {  // the host shards the optimizer updates; the device caches copies of them (place)
    host_shard_.resize(n);
    for (std::size_t c = 0; c < n; ++c)
      if (units_[c]) host_shard_[c] = partition_.buckets()[c].param_shard;
  }
  partition_.allocate_gradient_shards(config.zero.contiguous_gradients);
  hook_modules();
  hook_gradients();  // before the reducer's own hooks: a chunk's tensors are READY_FOR_REDUCE when it launches
  start_reducer_and_optimizer(
      chunk_strategy_config(config, layout_), [this](std::size_t c) { return reduce_chunk(c); },
      [this](std::size_t c) {
        frame_releases();
        reductions_[c].finish(partition_, c);
        zero::reduced_frame(*this, partition_, c, bucket_names_[c], progress_, /*local_freed=*/true);
      });
  for (std::size_t c = 0; c < n; ++c) optimizer_->set_gather_after_step(c, layout_.keep_gathered[c]);
}

Gemini::~Gemini() {
  reducer_.reset();  // waits for the reductions in flight; each unit waits for its gather in flight
}

// ---- the hooks: which tensors each moment uses ----

void Gemini::hook_modules() {
  // The model's own hooks use the outer tensors (the embeddings at the start, ln_f and the tied head at the end:
  // the GPT runs them outside any module with hooks); each block's hooks its own tensors.
  hooks_.push_back(
      model_->register_pre_forward_hook([this](nn::Module&, std::span<const Tensor>) { use(outer_, /*forward_start=*/true); }));
  hooks_.push_back(model_->register_post_forward_hook(
      [this](nn::Module&, std::span<const Tensor>, const Tensor&) { done(outer_); }));
  hooks_.push_back(model_->register_pre_backward_hook([this](nn::Module&, const Tensor&) {
    frame_releases();
    use(outer_);
  }));
  for (std::size_t k = 0; k < model_->blocks.size(); ++k) {
    nn::Block& block = *model_->blocks[k];
    hooks_.push_back(block.register_pre_forward_hook([this, k](nn::Module&, std::span<const Tensor>) { use(block_tensors_[k]); }));
    hooks_.push_back(block.register_post_forward_hook(
        [this, k](nn::Module&, std::span<const Tensor>, const Tensor&) { done(block_tensors_[k]); }));
    hooks_.push_back(block.register_pre_backward_hook([this, k](nn::Module&, const Tensor&) {
      frame_releases();
      use(block_tensors_[k]);
    }));
  }
}

void Gemini::hook_gradients() {
  const nn::NamedTensors& params = partition_.params();
  for (std::size_t p = 0; p < params.size(); ++p) {
    Tensor t = params[p].second;
    hooks_.push_back(t.register_grad_hook([this, p](Tensor&) { gradient_final(p); }));
  }
}

// ---- the tensor states, and what they allow the chunks ----

void Gemini::use(const std::vector<std::size_t>& tensors, bool forward_start) {
  std::vector<std::size_t> chunks;  // the sharded chunks this moment uses, distinct, in order
  for (std::size_t p : tensors) {
    const std::size_t c = place_[p].chunk;
    if (units_[c] && std::find(chunks.begin(), chunks.end(), c) == chunks.end()) chunks.push_back(c);
  }
  const bool recording = auto_ || max_prefetch_ > 0;  // the schedule drives eviction and prefetch
  if (recording && forward_start) {
    pos_ = moment_ = 0;
    if (!auto_stats_.warmed_up) {  // the warm-up records the last forward before its first backward ends
      recorded_.clear();
      period_extra_.clear();
      moment_at_.clear();
      in_period_ = false;
    }
  }
  if (recording && !auto_stats_.warmed_up) {
    if (auto_) close_period();
    moment_at_.push_back(recorded_.size());
    recorded_.insert(recorded_.end(), chunks.begin(), chunks.end());
  }
  // max_prefetch: the next chunks the schedule uses after this moment, gathered now so that their all-gathers run
  // while this moment's modules compute (the same on every rank: the schedule and the units' states only).
  std::vector<std::size_t> ahead;
  if (max_prefetch_ > 0 && auto_stats_.warmed_up && on_schedule(pos_, chunks)) {
    std::vector<std::size_t> seen(chunks);
    for (std::size_t k = pos_ + chunks.size(); k < recorded_.size() && seen.size() - chunks.size() < max_prefetch_; ++k) {
      const std::size_t c = recorded_[k];
      if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
      seen.push_back(c);
      if (units_[c]->state() == zero::Unit::State::sharded) ahead.push_back(c);
    }
  }
  if (auto_) ahead = place(chunks, ahead);  // room for this moment's chunks, and the prefetches that fit
  for (std::size_t p : tensors) {
    const auto [c, slot] = place_[p];
    if (units_[c] && units_[c]->state() != zero::Unit::State::gathered) {
      if (units_[c]->state() == zero::Unit::State::sharded) count_gather(c);
      units_[c]->ensure_gathered();  // all-gather (a shard in host memory is copied up first)
    }
    if (states_[c].state(slot) != TensorState::compute) states_[c].set(slot, TensorState::compute);
  }
  for (std::size_t c : ahead) {
    count_gather(c);
    ++auto_stats_.prefetches;
    units_[c]->gather_async();  // gathering: the use that needs it waits for the all-gather
  }
  if (recording) {
    pos_ += chunks.size();
    ++moment_;
  }
  if (auto_ && !auto_stats_.warmed_up) {  // a new period begins: what it adds beyond the model data now is measured
    model_at_moment_ = model_bytes();
    take_period_peak(partition_.device());
    period_extra_.push_back(0);
    in_period_ = true;
  }
}

void Gemini::count_gather(std::size_t c) {
  ++gathers_;
  if (auto_ && !resident(c)) ++auto_stats_.uncached_gathers;  // the Unit copies it up from the host
}

bool Gemini::on_schedule(std::size_t at, const std::vector<std::size_t>& chunks) const {
  if (!auto_stats_.warmed_up || at + chunks.size() > recorded_.size()) return false;
  for (std::size_t i = 0; i < chunks.size(); ++i)
    if (recorded_[at + i] != chunks[i]) return false;
  return true;
}

void Gemini::done(const std::vector<std::size_t>& tensors) {
  for (std::size_t p : tensors) {
    const auto [c, slot] = place_[p];
    if (states_[c].state(slot) == TensorState::compute) states_[c].set(slot, TensorState::hold);
  }
  for (std::size_t p : tensors) release_if_idle(place_[p].chunk, /*framed=*/true);
}

void Gemini::gradient_final(std::size_t param) {
  const auto [c, slot] = place_[param];
  states_[c].set(slot, TensorState::hold_after_bwd);    // its backward is done
  states_[c].set(slot, TensorState::ready_for_reduce);  // and its gradient final: every micro-step is reduced
}

std::unique_ptr<dist::Work> Gemini::reduce_chunk(std::size_t c) {
  // From a gradient hook every tensor is READY_FOR_REDUCE (the reducer counts the same hooks). After backward
  // returned, a chunk with a tensor backward did not reach is reduced too: its gradient is zeros.
  if (!backward_returned_ && !states_[c].can_reduce())
    throw std::logic_error("Gemini: " + bucket_names_[c] + " was reduced before all its tensors were READY_FOR_REDUCE");
  auto work = reduce(c);  // its gradients packed and freed: the reduce-scatter has them
  states_[c].set_all(TensorState::ready_for_reduce, TensorState::hold);
  states_[c].set_all(TensorState::compute, TensorState::hold);
  // Inside a gradient hook the engine still holds the gradient it just made: the frame comes later.
  release_if_idle(c, /*framed=*/false);
  return work;
}

void Gemini::release_if_idle(std::size_t c, bool framed) {
  zero::Unit* unit = units_[c].get();
  if (!unit || unit->state() == zero::Unit::State::sharded || !states_[c].can_release()) return;
  unit->release(framed);
  if (!framed) unframed_releases_.push_back(unit);
}

void Gemini::frame_releases() {
  for (const zero::Unit* unit : unframed_releases_) unit->released_frame();
  unframed_releases_.clear();
}

void Gemini::end_backward() {
  if ((auto_ || max_prefetch_ > 0) && !auto_stats_.warmed_up) {  // the warm-up is over: its record is the schedule
    if (auto_) close_period();
    in_period_ = false;
    if (auto_) agree_on_period_peaks();
    auto_stats_.warmed_up = true;
    auto_stats_.schedule_uses = recorded_.size();
    schedule_ = UseSchedule(recorded_);
    for (std::int64_t extra : period_extra_)
      auto_stats_.warmup_non_model_peak = std::max(auto_stats_.warmup_non_model_peak, extra);
  }
  frame_releases();
  backward_returned_ = true;
  reducer_->end_backward();  // the chunks no hook launched
  backward_returned_ = false;
  frame_releases();
  for (std::size_t c = 0; c < units_.size(); ++c) release_if_idle(c, /*framed=*/true);
  progress_.in_backward = false;
}

// ---- read-outs ----

bool Gemini::gathered(std::size_t c) const {
  return !units_.at(c) || units_[c]->state() == zero::Unit::State::gathered;
}

void Gemini::gather_all() {
  for (auto& unit : units_)
    if (unit) unit->ensure_gathered();
}

void Gemini::release_all() {
  for (auto& unit : units_)
    if (unit) unit->release();
}

trace::FlatSpace Gemini::flat_space() const {
  trace::FlatSpace space = ShardedStrategy::flat_space();
  for (std::size_t c = 0; c < space.buckets.size(); ++c) space.buckets[c].persistent = layout_.keep_gathered[c];
  return space;
}

trace::RankHoldings Gemini::holdings() const {
  trace::RankHoldings h = ShardedStrategy::holdings();
  for (std::size_t c = 0; c < units_.size(); ++c) {
    trace::ChunkHolding chunk;
    const zero::Unit* unit = units_[c].get();
    chunk.unit = !unit                                              ? "kept"
                 : unit->state() == zero::Unit::State::sharded   ? "sharded"
                 : unit->state() == zero::Unit::State::gathering ? "gathering"
                                                                 : "gathered";
    chunk.shard = !layout_.param_on_host[c] ? "device" : resident(c) ? "cached" : "host";  // auto: every sharded one
    for (TensorState s : {TensorState::free, TensorState::compute, TensorState::hold, TensorState::hold_after_bwd,
                          TensorState::ready_for_reduce})
      if (const std::size_t n = states_[c].count(s)) chunk.tensors.emplace_back(state_name(s), static_cast<int>(n));
    h.chunks.push_back(std::move(chunk));
  }
  return h;
}

void Gemini::paint_bucket(std::size_t b, trace::RankHoldings& h) const {
  zero::paint_unit_bucket(partition_, b, units_[b].get(), progress_, reductions_[b].grads, h);
}

zero::ModelStateBytes Gemini::bucket_bytes(std::size_t b) const {
  return zero::unit_bucket_bytes(partition_, b, units_[b].get());
}

}  // namespace minitorch::gemini
