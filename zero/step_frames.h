#pragma once
/// \file step_frames.h
/// How the stages describe themselves for frames.json (trace/frames.h, docs/frames.md): the flat
/// space they lay the model out in, what this rank holds of it right now — read from the buffers
/// they own, never from a plan — and the frames they record at each transition of a step.
///
/// A frame costs nothing untraced: `frame(strategy, make_note)` calls `make_note` (which builds the
/// caption strings) only while a sink listens.
///
/// \code
///   frame(*this, [&] { return trace::FrameNote{"reduce", "reduce-scatter " + name, caption, collective}; });
/// \endcode
#include <string>
#include <utility>
#include <vector>

#include "dist/ddp.h"
#include "dist/process_group.h"
#include "optim/adamw.h"
#include "trace/frames.h"
#include "zero/nvme_optimizer.h"
#include "zero/partition.h"
#include "zero/strategy.h"

namespace minitorch::zero {

/// Records a frame of `s` (its holdings() and the note) when tracing; else does nothing.
template <class MakeNote>
void frame(const GradientStrategy& s, MakeNote&& make_note) {
  if (events::enabled()) trace::record_frame(make_note(), s.holdings());
}

/// The flat space of a partition: its buckets end to end (ShardedBucket::first), named `names[b]`,
/// each parameter at its slot.
trace::FlatSpace partition_space(const Partition& partition, const std::vector<std::string>& names);
/// "bucket 0", "bucket 1", ... for a partition's buckets.
std::vector<std::string> numbered_buckets(const Partition& partition);
/// Paints this rank's pieces that have optimizer state (AdamW makes it at their first update) as "shard". With
/// `nvme` (the optimizer on NVMe, whose AdamW keeps no state in memory) every piece once a step has run, and the
/// tile its step holds in host memory, if any, as "staged".
void paint_optimizer_shard(const Partition& partition, const optim::AdamW& adamw, trace::HeldRanges& optim,
                           const NvmeOptimizer* nvme = nullptr);
/// This rank's shard of bucket b, [first, second) in the flat space.
std::pair<std::int64_t, std::int64_t> own_shard(const Partition& partition, std::size_t b);
/// What the ZeRO stages remember for their frames: which buckets' reduce-scatters are in flight and
/// which this step has finished, and whether a backward is running (a reduction finishing then
/// belongs to the backward phase).
struct ReductionProgress {
  std::vector<bool> reducing, reduced;  ///< per bucket
  bool in_backward = false;
  void resize(std::size_t buckets) {
    reducing.assign(buckets, false);
    reduced.assign(buckets, false);
  }
  void clear() { resize(reduced.size()); }
  /// The state of bucket b's gradient shard: "reducing" while its reduce-scatter is in flight (the
  /// buffer is there, its values not yet reduced), "reduced" once this step finished one, else `otherwise`.
  const char* shard_state(std::size_t b, const char* otherwise) const {
    return reducing.at(b) ? "reducing" : reduced.at(b) ? "reduced" : otherwise;
  }
};
/// Stages 2 and 3: bucket b's gradient shard (ReductionProgress::shard_state, else "shard"), then
/// the parameters whose full .grad is allocated — backward's local gradients, a buffer of their own
/// over the shard until their reduction frees them — as "accumulating". `packing`: the gradients a reduction in
/// chunks still holds (ShardReduction::grads, zero/bucket_reducer.h: freed once its last chunk is packed), the same.
void paint_sharded_gradients(const Partition& partition, std::size_t b, const ReductionProgress& progress,
                             trace::HeldRanges& grads, const std::vector<Tensor>& packing = {});
/// Marks bucket b reduced (no longer reducing) and records the frame of its finished reduce-scatter; `local_freed`: the
/// full local gradients were freed when it started (stages 2, 3), else they stay (stage 1).
void reduced_frame(const GradientStrategy& s, const Partition& partition, std::size_t b, const std::string& name,
                   ReductionProgress& progress, bool local_freed);

// ---- the frames each transition records: the captions live here, so a stage's code shows only its
// algorithm (a transition is its state change and one line that records it) ----

/// Stage 0 on N ranks: DDP's bucket all-reduces have finished (`space_numel`: the flat space's size).
void all_reduced_frame(const GradientStrategy& s, dist::DistributedDataParallel& ddp, std::int64_t space_numel);
/// Stage 0: the update of every parameter (`replicated`: on N ranks, with the same averaged gradients).
void update_frame(const GradientStrategy& s, bool replicated);
/// Stages 1–3: the update of this rank's shard; the norm was one all-reduced number over `group`.
void sharded_update_frame(const GradientStrategy& s, dist::ProcessGroup& group);
/// ZeRO-Infinity's tiled step on NVMe: tile k of `tiles` (the most of any rank) in host memory, updated, about to be
/// written back (state "staged"; a rank with fewer tiles shows none).
void tile_frame(const GradientStrategy& s, std::size_t k, std::size_t tiles);
/// Stages 1–3: the updated parameters all-gathered after the step, `sent` elements and `bytes` from this rank
/// (`all`: every bucket; else only ZeRO-3's persistent ones).
void gathered_after_step_frame(const GradientStrategy& s, const Partition& partition, bool all, std::int64_t sent,
                               std::int64_t bytes, int world);
/// ZeRO-3: unit b (named `unit`) is gathered for its forward or its backward.
void unit_gathered_frame(const GradientStrategy& s, const Partition& partition, std::size_t b, const std::string& unit,
                         bool in_backward);
/// ZeRO-3: unit `unit`'s gathered parameters are freed; the shard stays. In backward its gradients
/// were flattened and freed and their reduce-scatter is in flight.
void unit_released_frame(const GradientStrategy& s, const std::string& unit, bool in_backward);

/// Bucket b's collective `op` ("reduce_scatter", "all_gather") as frames.json describes it: the whole
/// bucket's range, and the elements and bytes this rank sends in the ring.
nlohmann::json bucket_collective(const Partition& partition, std::size_t b, const std::string& op);

}  // namespace minitorch::zero
