/// \file auto_placement.cpp
/// Gemini's auto placement (gemini/gemini.h, docs/design.md §11): the warm-up's period peaks, which shards the device
/// caches before each moment (OPT or LRU eviction, prefetch that must fit), the loads, evictions and refreshes.
#include <algorithm>
#include <utility>

#include "gemini/eviction.h"
#include "gemini/gemini.h"
#include "minitorch/allocator.h"
#include "minitorch/events.h"
#include "trace/frames.h"

namespace minitorch::gemini {

// ---- auto placement: which shards the device caches ----

void Gemini::close_period() {
  const std::int64_t peak = take_period_peak(partition_.device());
  if (in_period_) period_extra_.back() = std::max(period_extra_.back(), peak - model_at_moment_);
}

void Gemini::agree_on_period_peaks() {
  // A period's peak differs from rank to rank by when a reduce-scatter's buffers are freed (as it completes); the
  // prefetch decisions built on the peaks must not differ (they order the all-gathers): every rank takes the
  // largest. Each peak travels exact as two i32 elements (bits 31 and up, then the low 31 bits).
  const auto n = static_cast<std::int64_t>(period_extra_.size());
  Tensor mine = Tensor::empty({2 * n}, DType::i32);
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t v = std::max<std::int64_t>(period_extra_[k], 0);
    mine.data<std::int32_t>()[2 * k] = static_cast<std::int32_t>(v >> 31);
    mine.data<std::int32_t>()[2 * k + 1] = static_cast<std::int32_t>(v & 0x7fffffff);
  }
  const Tensor all = group_.all_gather(mine, 2 * n * group_.size());
  const std::int32_t* each = all.data<std::int32_t>();
  for (std::int64_t k = 0; k < n; ++k) {
    period_extra_[k] = 0;
    for (int r = 0; r < group_.size(); ++r) {
      const std::int32_t* v = each + 2 * (r * n + k);
      period_extra_[k] = std::max(period_extra_[k], (static_cast<std::int64_t>(v[0]) << 31) | v[1]);
    }
  }
}

std::int64_t Gemini::evict_one(std::size_t at, const std::vector<std::size_t>& keep, bool known_future,
                               std::size_t farther_than) {
  // Cached shards that may go: not read by an all-gather in flight (gathering), and not about to be gathered now.
  // A gathered chunk's cached shard may go too: its full buffer holds the values until it is released.
  std::vector<std::size_t> candidates;
  for (std::size_t c = 0; c < units_.size(); ++c) {
    if (!units_[c] || !resident(c)) continue;
    const zero::Unit::State st = units_[c]->state();
    const bool kept = std::find(keep.begin(), keep.end(), c) != keep.end();
    if (st == zero::Unit::State::gathering || (st == zero::Unit::State::sharded && kept)) continue;
    if (farther_than != UseSchedule::kNever && schedule_.next_use(c, at) <= farther_than) continue;
    candidates.push_back(c);
  }
  if (candidates.empty()) return 0;
  // After the warm-up the future is known: Belady's OPT. During it (or off the schedule) only the past: LRU.
  const UseSchedule so_far(auto_stats_.warmed_up ? std::vector<std::size_t>{} : recorded_);  // the warm-up's record
  const UseSchedule& record = auto_stats_.warmed_up ? schedule_ : so_far;
  const std::size_t victim = known_future ? evict_opt(record, at, candidates)
                                          : evict_lru(record, std::min(at, recorded_.size()), candidates);
  if (events::enabled()) {  // the choice and why, for the trace
    std::string why;
    if (known_future) {
      const std::size_t next = record.next_use(victim, at);
      why = next == UseSchedule::kNever ? "not used again this iteration (OPT)"
                                        : "next use at " + std::to_string(next) + ", the farthest (OPT)";
    } else {
      why = "the least recently used (LRU" + std::string(auto_stats_.warmed_up ? ", off the schedule)" : ", warm-up)");
    }
    trace::record_chunk_move(victim, "evict", why + "; at use " + std::to_string(at), shard_bytes(victim));
  }
  evict(victim);
  return shard_bytes(victim);
}

std::vector<std::size_t> Gemini::place(const std::vector<std::size_t>& now, const std::vector<std::size_t>& ahead) {
  if (capacity_ <= 0) {  // no limit: every shard is cached once loaded, every prefetch starts
    for (const auto* list : {&now, &ahead})
      for (std::size_t c : *list)
        if (!resident(c)) load(c);
    return ahead;
  }
  // The room for model data at this moment: during the warm-up the share Colossal-AI leaves it, afterwards the
  // capacity less what the coming period added beyond the model data in the warm-up.
  const bool steady = auto_stats_.warmed_up;
  auto room_until = [&](std::size_t last_moment) {  // the room through the periods moment_ .. last_moment
    if (!steady) return capacity_ * (1.0 - warmup_ratio_);
    std::int64_t peak = 0;
    if (moment_ >= period_extra_.size()) peak = auto_stats_.warmup_non_model_peak;
    for (std::size_t m = moment_; m <= last_moment && m < period_extra_.size(); ++m) peak = std::max(peak, period_extra_[m]);
    return capacity_ * steady_ratio_ - static_cast<double>(peak);
  };
  // The schedule's position of this moment: the recorded iteration (after the warm-up, when it still matches).
  const std::size_t at = steady ? pos_ : moment_at_.back();
  const bool known_future = on_schedule(at, now);
  std::int64_t model = model_bytes(), full = 0, shards = 0;
  for (std::size_t c : now) {
    if (units_[c]->state() != zero::Unit::State::sharded) continue;  // gathered already: its buffer counts in `model`
    full += full_bytes(c);
    if (!resident(c)) shards += shard_bytes(c);
  }
  const double room = room_until(moment_);
  while (static_cast<double>(model + full + shards) > room) {
    const std::int64_t freed = evict_one(at, now, known_future);
    if (freed == 0) break;  // nothing left to evict: the gathers go ahead (an out-of-memory error if they do not fit)
    model -= freed;
  }
  model += full;
  // Prefetch (the same on every rank: the schedule, the agreed peaks and the model data are): a chunk gathered ahead
  // holds its full buffer through the periods until its use. It may take the room of cached shards used after it
  // (OPT would evict them for it at its use anyway); if it still does not fit, it and the chunks after it wait.
  std::vector<std::size_t> started;
  for (std::size_t c : ahead) {
    const std::size_t use_at = schedule_.next_use(c, at);
    const auto moment_of_use = static_cast<std::size_t>(
        std::upper_bound(moment_at_.begin(), moment_at_.end(), use_at) - moment_at_.begin() - 1);
    const double room_ahead = room_until(moment_of_use);
    std::vector<std::size_t> keep(now);
    keep.insert(keep.end(), started.begin(), started.end());
    keep.push_back(c);
    while (static_cast<double>(model + full_bytes(c)) > room_ahead) {
      const std::int64_t freed = evict_one(at, keep, known_future, use_at);
      if (freed == 0) break;
      model -= freed;
    }
    if (static_cast<double>(model + full_bytes(c)) > room_ahead) {
      ++auto_stats_.prefetches_refused;
      break;
    }
    model += full_bytes(c);
    started.push_back(c);
  }
  std::vector<std::size_t> cacheable(now);
  cacheable.insert(cacheable.end(), started.begin(), started.end());
  for (std::size_t c : cacheable) {  // cache what still fits; the rest is copied up into its gather slot only
    if (resident(c) || units_[c]->state() != zero::Unit::State::sharded) continue;
    if (static_cast<double>(model + shard_bytes(c)) <= room) {
      load(c);
      model += shard_bytes(c);
    }
  }
  return started;
}

void Gemini::load(std::size_t c) {
  zero::ShardedBucket& b = partition_.buckets()[c];
  Tensor cached;
  {
    TagScope scope(MemTag::param);
    cached = Tensor::empty(host_shard_[c].shape(), host_shard_[c].dtype(), partition_.device());
  }
  trace::record_chunk_move(c, "load", "cached on the device", shard_bytes(c));
  cached.copy_(host_shard_[c]);  // h2d: the shard's P·size/N bytes
  b.param_shard = cached;        // the gathers send from here now (zero/unit.h: home device)
  b.home = zero::ShardHome::device;
  ++auto_stats_.loads;
}

void Gemini::evict(std::size_t c) {
  uncache(c);
  ++auto_stats_.evictions;
}

void Gemini::uncache(std::size_t c) {
  zero::ShardedBucket& b = partition_.buckets()[c];
  b.param_shard = host_shard_[c];  // the device copy is freed; the host's is current (the optimizer writes it)
  b.home = zero::ShardHome::host;
}

bool Gemini::resident(std::size_t c) const {
  return !units_.at(c) || partition_.buckets()[c].home == zero::ShardHome::device;
}

std::int64_t Gemini::shard_bytes(std::size_t c) const {
  return full_bytes(c) / partition_.world();
}

std::int64_t Gemini::full_bytes(std::size_t c) const {
  const zero::ShardedBucket& b = partition_.buckets()[c];
  return b.numel * static_cast<std::int64_t>(dtype_size(b.param_shard.dtype()));
}

std::int64_t Gemini::model_bytes() const {
  const MemoryStats m = memory_stats(partition_.device());
  return m.current(MemTag::param) + m.current(MemTag::grad) + m.current(MemTag::optim);
}

zero::StepResult Gemini::step(const zero::StepRequest& request) {
  zero::StepResult result = ShardedStrategy::step(request);
  if (auto_)  // the host AdamW wrote the host shards: the cached copies follow (h2d)
    for (std::size_t c = 0; c < units_.size(); ++c)
      if (units_[c] && resident(c)) {
        partition_.buckets()[c].param_shard.copy_(host_shard_[c]);
        ++auto_stats_.refreshes;
      }
  return result;
}

void Gemini::load_parameters(const nn::NamedTensors& whole) {
  if (auto_)
    for (std::size_t c = 0; c < units_.size(); ++c)
      if (units_[c] && resident(c)) uncache(c);  // not an eviction: no room was made
  ShardedStrategy::load_parameters(whole);
}

}  // namespace minitorch::gemini
