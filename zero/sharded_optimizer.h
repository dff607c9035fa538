#pragma once
/// \file sharded_optimizer.h
/// The optimizer over a shard, what ZeRO-1, -2 and -3 share (docs/design.md §6): AdamW over this rank's
/// pieces of a Partition (their fp32 master, m, v: K·Ψ/N bytes), and the step that ends with the
/// updated parameters back on every rank (the sequence: zero/step_sequence.h):
///
///   norm      Σ g² over my pieces, all-reduced as one scalar → √ = the global norm (no gathering);
///             ÷ the loss scale (fp16); not finite and skip_on_overflow: zero the gradients, stop here
///   clip      multiplier max_norm / (norm + 1e-6) when the norm is above max_norm, × 1/loss scale
///   update    AdamW on my pieces (views into the parameters' flat buffers), in tiles of at most
///             `tile_elements` (zero/tiled_step.h: ZeRO-3's sub_group_size; the whole shard below
///             stage 3), each tile's gradient × the multiplier in an f32 temporary (MemTag::optim_temp)
///   gather    each bucket's parameters all-gathered from their owners: (N−1)/N·(Ψ + padding) elements
///   zero      the gradient buffers (they stay attached)
///
/// With ZeRO-Offload the AdamW runs on the host, over host copies of my pieces (zero/offload_optimizer.h):
/// the reduced gradients go down before the norm, the updated values come up before the gather. With
/// ZeRO-Infinity's NVMe (stage 3) the states live in this rank's swap files and the update walks them tile by
/// tile (zero/nvme_optimizer.h); the norm reads the device's gradients, as without offload.
#include <memory>
#include <vector>

#include "dist/process_group.h"
#include "optim/adamw.h"
#include "zero/config.h"
#include "zero/nvme_optimizer.h"
#include "zero/nvme_store.h"
#include "zero/offload_optimizer.h"
#include "zero/partition.h"
#include "zero/strategy.h"

namespace minitorch::zero {

/// Moves every bucket's parameters into its flat buffer (Partition::adopt_parameters) and gives every
/// rank rank 0's values, one broadcast per bucket: ZeRO-1 and -2 start from the same weights everywhere.
void adopt_parameters_from_rank0(Partition& partition, dist::ProcessGroup& group);

class ShardedOptimizer {
 public:
  /// AdamW with the config's `optimizer` settings over `partition`'s pieces; their gradients must be
  /// in place (Partition::adopt_gradients or allocate_gradient_shards). Both must outlive this, and so must
  /// `swap`, the rank's swap space, which offload_optimizer "nvme" needs (stage 3).
  /// The step's tiles: zero_optimization.sub_group_size at stage 3, the whole shard below.
  ShardedOptimizer(Partition& partition, const StrategyConfig& config, dist::ProcessGroup& group,
                   NvmeStore* swap = nullptr);

  /// One step of this rank's shard, the gather, the gradients zeroed (strategy.h: StepRequest).
  StepResult step(const StepRequest& request);
  /// Elements per tile of the step.
  std::int64_t tile_elements() const { return tile_elements_; }
  /// Every bucket's parameters from their owners (those marked to be gathered after the step).
  void gather_parameters();
  /// Copies this rank's pieces out of `whole` (name -> the parameter's values, any shape), then
  /// gather_parameters(): what a resumed run does, on any number of ranks. Every rank calls it.
  void load_parameters(const nn::NamedTensors& whole);
  /// (b - a) this rank's pieces with their values, piece order: views of the shards, or for a shard on disk
  /// (offload_param "nvme") host tensors read from its file. What a checkpoint saves.
  nn::NamedTensors readable_pieces() const;
  /// Whether step() all-gathers bucket b (default: every bucket). ZeRO-3 keeps its units sharded:
  /// their next forward gathers them.
  void set_gather_after_step(std::size_t bucket, bool gather) { gather_after_step_.at(bucket) = gather; }
  /// The strategy whose holdings the step's frames show (zero/step_frames.h); none: no frames.
  /// Records this rank's frames for `strategy` (on NVMe: a frame per tile of the step, zero/step_frames.h).
  void set_frame_source(const GradientStrategy* strategy);

  optim::AdamW& adamw() { return offload_ ? offload_->adamw() : nvme_ ? nvme_->adamw() : *adamw_; }
  const optim::AdamW& adamw() const { return offload_ ? offload_->adamw() : nvme_ ? nvme_->adamw() : *adamw_; }
  /// Whether the optimizer's states live off the device (ZeRO-Offload's host, or NVMe).
  bool offloaded() const { return offload_ != nullptr || nvme_ != nullptr; }
  /// ZeRO-Infinity's NVMe optimizer and this rank's swap space (nullptr without device "nvme").
  const NvmeOptimizer* nvme() const { return nvme_.get(); }
  const NvmeStore* swap() const { return swap_; }
  /// The optimizer state a checkpoint saves: AdamW's, plus with offload in 16-bit training each piece's
  /// host master as "master.<piece>" — the names a run without offload saves, so either resumes the other.
  nn::NamedTensors state_tensors() const;
  void load_state(const nn::NamedTensors& state, std::int64_t steps);

 private:
  Partition& partition_;
  dist::ProcessGroup& group_;
  std::unique_ptr<optim::AdamW> adamw_;         ///< on the device (none with offload)
  std::unique_ptr<OffloadOptimizer> offload_;   ///< ZeRO-Offload: the AdamW on the host (none without)
  NvmeStore* swap_ = nullptr;                   ///< device "nvme": this rank's swap folder (the strategy's)
  std::unique_ptr<NvmeOptimizer> nvme_;         ///< device "nvme": the tiled step over the swap files
  std::vector<bool> gather_after_step_;
  std::int64_t tile_elements_;
  const GradientStrategy* frame_source_ = nullptr;
};

}  // namespace minitorch::zero
