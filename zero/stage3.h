#pragma once
/// \file stage3.h
/// ZeRO stage 3: the optimizer states, the gradients **and the parameters** are sharded —
/// (P + G + K)·Ψ/N bytes per rank (docs/design.md §8), plus padding and the persistent parameters.
/// A rank holds a whole parameter only while its **unit** runs. The units: each transformer block,
/// and the outer unit (the embeddings wte and wpe, the final LayerNorm; the head reuses wte). Each
/// unit is a small state machine (zero/unit.h), driven by the module hooks (nn/hooks.h):
///
///              pre-forward: all-gather                 post-forward: release
///   sharded ───────────────────────────▶ gathered ─────────────────────────────▶ sharded
///      ▲         (async when prefetched:                 pre-backward: all-gather
///      │          "gathering" until waited)   ───────────────────────────────▶ gathered
///      └──────── every gradient of the unit final: flatten, free the gradients, reduce-scatter,
///                release the parameters                                      (BucketReducer)
///
/// Per micro-step every parameter is gathered twice and reduce-scattered once: 3·(N−1)/N·Ψ elements,
/// 3A·(N−1)/N·Ψ per step with A micro-steps. The step updates the shards only; nothing is gathered
/// after it (the next forward does). The next unit is prefetched (stage3_prefetch_bucket_size
/// elements ahead) so its gather runs while the current one computes.
///
/// offload_param (ZeRO-Infinity; with offload_optimizer): each unit's shard lives in host memory. A gather
/// copies it up first (h2d, in the prefetch too), a release frees only the device buffer, and the host
/// AdamW updates the shard in place (zero/offload_optimizer.h). Device parameters: the gathered units only;
/// per step 2A·P·Ψ/N bytes go up (two gathers per micro-step) and the gradient shard, G·Ψ/N, comes down.
///
/// Parameters with at most `stage3_param_persistence_threshold` elements stay whole on every rank
/// (DeepSpeed's default 1e5 exceeds every tensor of the baby GPT: set 0 to shard them): they are
/// reduced and updated as at stage 2, in buckets of their own, and all-gathered after the step. They stay
/// on the device under offload_param too, as DeepSpeed keeps its persistent parameters.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nn/gpt.h"
#include "zero/sharded_strategy.h"
#include "zero/unit.h"

namespace minitorch::zero {

/// ZeRO-3's buckets for a GPT's named_parameters(): the outer unit (what is not in a block), one unit
/// per block (their tensors above stage3_param_persistence_threshold elements; a unit whose tensors
/// are all persistent is left out), then the persistent tensors in reverse order of use, at most
/// reduce_bucket_size elements per bucket. Reads names and sizes only (the estimator plans with it).
struct UnitPlan {
  std::vector<std::vector<std::size_t>> buckets;  ///< indices into the parameters, slot order
  std::vector<std::size_t> units;                 ///< bucket indices of the units, forward order
  std::vector<bool> persistent;                   ///< per bucket
  bool has_outer = false;                         ///< units[0] is the outer unit
  std::vector<std::ptrdiff_t> block_pos;          ///< per block: its position in `units` (-1: none)
  std::vector<std::string> names;                 ///< per bucket: "outer", "h.0", ..., "persistent 0", ...
};
UnitPlan plan_units(const nn::NamedTensors& params, std::size_t n_blocks, const StrategyConfig& config);

class Stage3 final : public ShardedStrategy {
 public:
  /// Broadcasts rank 0's parameters, keeps this rank's shard of each unit and releases the rest,
  /// hooks the modules and the gradients, and builds AdamW over this rank's pieces. N >= 2 ranks.
  Stage3(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group);
  ~Stage3() override;

  std::string name() const override { return "ZeRO-3"; }
  int zero_stage() const override { return 3; }
  /// Also releases the units this backward did not reach.
  void end_backward() override;
  /// The partition's buckets, the persistent ones marked (their traffic differs: docs/frames.md).
  trace::FlatSpace flat_space() const override;
  // step(): the shards are updated; only the persistent buckets are gathered after it (ShardedStrategy).

  /// The units in forward order: the outer unit, then the blocks.
  const std::vector<Unit>& units() const { return units_; }
  /// Every unit gathered / released (a consolidated view of the parameters, e.g. for a test or a save).
  void gather_all();
  void release_all();
  /// Gathers started ahead of need (prefetch), since construction.
  std::int64_t prefetched() const { return prefetched_; }

 private:
  void paint_bucket(std::size_t b, trace::RankHoldings& h) const override;
  ModelStateBytes bucket_bytes(std::size_t b) const override;
  Stage3(std::shared_ptr<nn::GPT> model, const StrategyConfig& config, dist::ProcessGroup& group, const UnitPlan& plan);
  /// The module hooks that drive the units (below), and the backward order they prefetch in.
  void hook_units(const UnitPlan& plan);
  /// The unit of bucket b; nullptr for a persistent bucket.
  Unit* unit_of(std::size_t b);
  const Unit* unit_of(std::size_t b) const;

  /// The frames of the units post_backward released inside a gradient hook, recorded at the next
  /// transition outside it (the next unit's pre-backward, a reduction finishing, end_backward).
  void frame_releases();
  /// Starts the gathers of the first units of `next` (in the order they will run) that fit in
  /// stage3_prefetch_bucket_size elements.
  void prefetch(std::span<Unit* const> next);
  // ---- the unit hooks (FSDP2's names); `pos`: the unit's position in forward order (units_) ----
  void pre_forward(std::size_t pos);   ///< the unit's module is about to run: gathered, the next prefetched
  void post_forward(std::size_t pos);  ///< its forward has returned: released
  void pre_backward(std::size_t pos);  ///< its backward is about to run: gathered again, the next prefetched
  /// Bucket `b`'s last gradient is final (the reducer's launch): its reduce-scatter starts, its unit is released.
  std::unique_ptr<dist::Work> post_backward(std::size_t b);
  /// Where the unit at forward position `pos` comes in backward_order_ (blocks reversed, the outer unit first).
  std::size_t backward_position(std::size_t pos) const;

  std::vector<Unit> units_;                            ///< forward order
  std::vector<Unit*> forward_order_, backward_order_;  ///< units_ as forward and backward meet them
  bool has_outer_ = false;                             ///< units_[0] is the outer unit
  std::vector<Unit*> unframed_releases_;               ///< released in a gradient hook, no frame yet
  std::int64_t prefetch_elements_ = 0, prefetched_ = 0;
  std::vector<HookHandle> hooks_;
  // bucket_names_ (ShardedStrategy): UnitPlan::names
};

}  // namespace minitorch::zero
