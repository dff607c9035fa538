#include "zero/step_frames.h"

namespace minitorch::zero {

trace::FlatSpace partition_space(const Partition& partition, const std::vector<std::string>& names) {
  trace::FlatSpace space;
  for (std::size_t b = 0; b < partition.buckets().size(); ++b) {
    const ShardedBucket& bucket = partition.buckets()[b];
    trace::SpaceBucket& sb = space.add_bucket(names.at(b), bucket.numel);
    std::int64_t at = bucket.first;
    for (std::size_t p : bucket.members) {
      const auto& [name, t] = partition.params()[p];
      sb.params.push_back({name, at, at + t.numel()});
      at += t.numel();
    }
  }
  return space;
}

std::vector<std::string> numbered_buckets(const Partition& partition) {
  std::vector<std::string> names;
  for (std::size_t b = 0; b < partition.buckets().size(); ++b) names.push_back("bucket " + std::to_string(b));
  return names;
}

void paint_optimizer_shard(const Partition& partition, const optim::AdamW& adamw, trace::HeldRanges& optim,
                           const NvmeOptimizer* nvme) {
  for (const ShardPiece& piece : partition.pieces()) {
    if (nvme ? adamw.step_count() == 0 : !adamw.has_state(piece.name)) continue;
    const std::int64_t first = partition.buckets()[piece.bucket].first;
    optim.paint(first + piece.range.begin, first + piece.range.end, "shard");
  }
  if (!nvme) return;
  for (const NvmeOptimizer::StagedRange& r : nvme->staged())  // the tile in host memory
    for (const ShardPiece& piece : partition.pieces())
      if (piece.name == r.piece) {
        const std::int64_t at = partition.buckets()[piece.bucket].first + piece.range.begin;
        optim.paint(at + r.begin, at + r.end, "staged");
      }
}

std::pair<std::int64_t, std::int64_t> own_shard(const Partition& partition, std::size_t b) {
  const ShardedBucket& bucket = partition.buckets()[b];
  const std::int64_t begin = bucket.first + bucket.shard_begin(partition.rank(), partition.world());
  return {begin, begin + bucket.numel / partition.world()};
}

void paint_sharded_gradients(const Partition& partition, std::size_t b, const ReductionProgress& progress,
                             trace::HeldRanges& grads, const std::vector<Tensor>& packing) {
  const ShardedBucket& bucket = partition.buckets()[b];
  if (bucket.grad_shard.defined()) {
    const auto [begin, end] = own_shard(partition, b);
    grads.paint(begin, end, progress.shard_state(b, "shard"));
  }
  std::int64_t at = bucket.first;
  for (std::size_t i = 0; i < bucket.members.size(); ++i) {
    const Tensor& t = partition.params()[bucket.members[i]].second;
    const bool held = t.grad().defined() || (i < packing.size() && packing[i].defined());
    if (held) grads.paint(at, at + t.numel(), "accumulating", trace::Overlay::separate_buffer);
    at += t.numel();
  }
}

void reduced_frame(const GradientStrategy& s, const Partition& partition, std::size_t b, const std::string& name,
                   ReductionProgress& progress, bool local_freed) {
  progress.reducing.at(b) = false;
  progress.reduced.at(b) = true;
  frame(s, [&] {
    return trace::FrameNote{
        progress.in_backward ? "backward" : "reduce", "reduce-scatter " + name,
        "reduce-scatter: each rank now holds, in its own shard of " + name +
            ", the average over all ranks of those gradients" +
            (local_freed ? "; its full local gradients were freed when the reduction began"
                         : "; the rest of its gradient buffer still holds only its own local gradients"),
        bucket_collective(partition, b, "reduce_scatter")};
  });
}

void all_reduced_frame(const GradientStrategy& s, dist::DistributedDataParallel& ddp, std::int64_t space_numel) {
  frame(s, [&] {
    dist::ProcessGroup& g = ddp.group();
    std::int64_t sent = 0;
    for (const dist::Bucket& b : ddp.buckets()) sent += dist::all_reduce_volume(b.buffer.numel(), g.size(), g.rank());
    return trace::FrameNote{"reduce", "all-reduce the gradients",
                            "all-reduce (average): every rank now holds the same gradients, the mean over all "
                            "ranks' micro-batches; each rank sent 2(N-1)/N of them",
                            trace::collective_json("all_reduce", -1, 0, space_numel, sent, sent * 4, g.size())};
  });
}

void update_frame(const GradientStrategy& s, bool replicated) {
  frame(s, [&] {
    return trace::FrameNote{"optimizer_step", "optimizer step",
                            replicated ? "AdamW: every rank updates all of its parameters with the same averaged "
                                         "gradients, so the replicas stay identical"
                                       : "AdamW: the parameters are updated with the gradients",
                            nullptr};
  });
}

void sharded_update_frame(const GradientStrategy& s, dist::ProcessGroup& group) {
  frame(s, [&] {
    const std::int64_t sent = dist::all_reduce_volume(1, group.size(), group.rank());
    return trace::FrameNote{"optimizer_step", "optimizer step of the shards",
                            "AdamW: each rank updates only its shard of the parameters, with its shard of the "
                            "reduced gradients and of the optimizer states (clipped by the global norm, one "
                            "all-reduced number)",
                            trace::collective_json("all_reduce", -1, 0, 0, sent, sent * 4, group.size())};
  });
}

void tile_frame(const GradientStrategy& s, std::size_t k, std::size_t tiles) {
  frame(s, [&] {
    return trace::FrameNote{
        "optimizer_step", "tile " + std::to_string(k + 1) + "/" + std::to_string(tiles),
        "ZeRO-Infinity's tiled step: each rank reads tile " + std::to_string(k + 1) +
            " of its optimizer shard (fp32 master, m, v) from its swap files into host memory, updates it with its "
            "gradients (AdamW on the CPU) and writes it back: the host holds a tile, never the shard (a rank with "
            "fewer tiles is done)",
        nlohmann::json()};
  });
}

void gathered_after_step_frame(const GradientStrategy& s, const Partition& partition, bool all, std::int64_t sent,
                               std::int64_t bytes, int world) {
  frame(s, [&] {
    const std::int64_t end = partition.buckets().back().first + partition.buckets().back().numel;
    return trace::FrameNote{"gather", all ? "all-gather the updated parameters" : "all-gather the persistent parameters",
                            all ? "all-gather: every rank sends its updated shard of each bucket to all others, so "
                                  "every rank again holds all the parameters, up to date"
                                : "all-gather: the small parameters kept whole on every rank are made whole again; "
                                  "the units stay sharded until their next forward gathers them",
                            trace::collective_json("all_gather", -1, 0, end, sent, bytes, world)};
  });
}

void unit_gathered_frame(const GradientStrategy& s, const Partition& partition, std::size_t b, const std::string& unit,
                         bool in_backward) {
  frame(s, [&] {
    const char* pass = in_backward ? "backward" : "forward";
    return trace::FrameNote{pass, "all-gather " + unit,
                            "all-gather: every rank now holds all of " + unit + "'s parameters, for its " + pass,
                            bucket_collective(partition, b, "all_gather")};
  });
}

void unit_released_frame(const GradientStrategy& s, const std::string& unit, bool in_backward) {
  frame(s, [&] {
    return trace::FrameNote{in_backward ? "backward" : "forward", "release " + unit,
                            in_backward ? "release: " + unit + "'s backward is done, its gathered parameters are freed "
                                              "(each rank keeps only its own shard); its gradients, flattened into a "
                                              "comm buffer and freed, are being reduce-scattered"
                                        : "release: " + unit + "'s gathered parameters are freed; each rank keeps only "
                                              "its own shard of them",
                            nullptr};
  });
}

nlohmann::json bucket_collective(const Partition& partition, std::size_t b, const std::string& op) {
  const ShardedBucket& bucket = partition.buckets()[b];
  const int n = partition.world(), r = partition.rank();
  const std::int64_t elements = op == "reduce_scatter" ? dist::reduce_scatter_volume(bucket.numel, n, r)
                                                       : dist::all_gather_volume(bucket.numel, n, r);
  const DType dtype = partition.params()[bucket.members.front()].second.dtype();
  return trace::collective_json(op, static_cast<int>(b), bucket.first, bucket.first + bucket.numel, elements,
                                elements * static_cast<std::int64_t>(dtype_size(dtype)), n);
}

}  // namespace minitorch::zero
