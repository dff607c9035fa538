#pragma once
/// \file unit.h
/// One ZeRO-3 unit (FSDP2's FSDPParamGroup): a module group whose parameters are gathered together —
/// a transformer block ("h.0", "h.1", ...), or the outer unit ("outer": wte, wpe, ln_f) — one bucket of
/// the Partition. Between uses a rank holds only its shard; the full flat buffer exists while the unit
/// computes. Its state machine, driven by Stage3's module hooks (zero/stage3.h):
///
///                gather_async()                ensure_gathered()
///    sharded ──────────────────▶ gathering ──────────────────────▶ gathered
///       ▲   (full buffer made,    (all-gather    (waited, parameters   │
///       │    all-gather started)   in flight)     attached)            │
///       └──────────────── release(): the full buffer freed ◀───────────┘
///           (from gathering too: an unused prefetch is waited for first)
///
/// ensure_gathered() on a sharded unit takes both steps at once (a gather on demand); gather_async()
/// alone is a prefetch. When the hooks call which: zero/stage3.h.
///
/// With offload_param (ZeRO-Infinity) the shard lives in host memory: gather_async() first copies it up
/// into its own slot of the new full buffer (h2d, P·numel/N bytes), and the all-gather sends it from there;
/// release() frees the device buffer, and the host shard, which only the optimizer step changes, stays.
/// A prefetch therefore moves the copy ahead of need too. With offload_param "nvme" the shard lives in a
/// file of the rank's swap space ("param.<bucket>"): gather_async() reads it into a host buffer of its size
/// (disk_read, tag param, freed at once), then copies it up the same way.
///
/// Reaching gathered and reaching sharded each record a frame (zero/step_frames.h); a release inside a
/// gradient hook records its frame later (release(false), then released_frame()).
#include <cstdint>
#include <memory>
#include <string>

#include "dist/process_group.h"
#include "trace/frames.h"
#include "zero/nvme_store.h"
#include "zero/partition.h"
#include "zero/step_frames.h"
#include "zero/strategy.h"

namespace minitorch::zero {

class Unit {
 public:
  enum class State { sharded, gathering, gathered };

  /// What the units of one stage share: the buckets and ranks they gather over, and for their frames the
  /// strategy whose holdings they show and whether a backward runs. All of it outlives the units.
  struct Shared {
    Partition& partition;
    dist::ProcessGroup& group;
    const GradientStrategy& strategy;
    const ReductionProgress& progress;
    ShardHome home = ShardHome::device;  ///< offload_param: every shard in host memory, or on disk (in `swap`)
    NvmeStore* swap = nullptr;           ///< the rank's swap space (home disk)
  };


  /// Bucket `bucket` of `shared.partition`, named `name` in the frames and the errors. Keeps this rank's
  /// shard of its parameters and releases the rest (Partition::shard_parameters): a unit starts sharded.
  Unit(std::string name, std::size_t bucket, const Shared& shared);
  ~Unit();  // waits for a gather in flight: it writes into the unit's buffer
  Unit(Unit&&) = default;

  const std::string& name() const { return name_; }
  std::size_t bucket_index() const { return bucket_; }
  /// Its buffers: the parameters' indices (members), the shard, the full buffer while not sharded.
  const ShardedBucket& bucket() const { return partition_.buckets()[bucket_]; }
  /// Elements of its flat buffer, padding included (numel / N per shard).
  std::int64_t numel() const { return bucket().numel; }
  /// (name, tensor) of its parameters, slot order; released while the unit is sharded.
  nn::NamedTensors parameters() const;
  State state() const { return state_; }

  // ---- the transitions (nothing happens where the unit already is) ----
  void gather_async();     ///< sharded → gathering: the full buffer allocated, its all-gather started
  void ensure_gathered();  ///< → gathered: waits for the gather (starting it if sharded), attaches the parameters
  /// → sharded: the parameters released and the full buffer freed, the shard stays. A frame unless
  /// `framed` is false (a release inside a gradient hook: released_frame() records it later).
  void release(bool framed = true);
  void released_frame() const;

  // ---- read-outs for the frames and the run report ----
  /// Paints its shard ("shard") and, while not sharded, its full buffer over it ("gathering", "gathered").
  void paint_parameters(trace::HeldRanges& params) const;
  /// Bytes of parameters it holds on the device: the shard (unless it lives on the host), plus the full
  /// buffer while it exists.
  std::int64_t parameter_bytes() const;

 private:
  /// The shard the all-gather sends, on the device: the shard itself, or with offload_param its host copy (read
  /// from disk first under "nvme") brought up into the full buffer's own slot (h2d), where the all-gather needs
  /// no copy of its own.
  Tensor shard_on_device();

  std::string name_;
  std::size_t bucket_;
  Partition& partition_;
  dist::ProcessGroup& group_;
  const GradientStrategy& strategy_;
  const ReductionProgress& progress_;
  State state_ = State::sharded;
  std::unique_ptr<dist::Work> gather_;  ///< the all-gather in flight (gathering)
  NvmeStore* swap_ = nullptr;           ///< home disk: where the shard lives
};

/// What a stage of units (ZeRO-3, Gemini) holds of bucket b, for the frames: `unit`'s shard and full buffer, or
/// with no unit (a bucket whole on every rank: ZeRO-3's persistent tensors, Gemini's kept-gathered chunks) the
/// whole flat buffer; then its gradient shard (`packing`: what a reduction in chunks still holds).
void paint_unit_bucket(const Partition& partition, std::size_t b, const Unit* unit, const ReductionProgress& progress,
                       const std::vector<Tensor>& packing, trace::RankHoldings& holdings);
/// Its bytes of parameters (the unit's shard and full buffer, or the whole flat buffer) and gradient shard.
ModelStateBytes unit_bucket_bytes(const Partition& partition, std::size_t b, const Unit* unit);

}  // namespace minitorch::zero
