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

void paint_optimizer_shard(const Partition& partition, const optim::AdamW& adamw, trace::HeldRanges& optim) {
  for (const ShardPiece& piece : partition.pieces()) {
    if (!adamw.has_state(piece.name)) continue;
    const std::int64_t first = partition.buckets()[piece.bucket].first;
    optim.paint(first + piece.range.begin, first + piece.range.end, "shard");
  }
}

std::pair<std::int64_t, std::int64_t> own_shard(const Partition& partition, std::size_t b) {
  const ShardedBucket& bucket = partition.buckets()[b];
  const std::int64_t begin = bucket.first + bucket.shard_begin(partition.rank(), partition.world());
  return {begin, begin + bucket.numel / partition.world()};
}

void paint_sharded_gradients(const Partition& partition, std::size_t b, const ReductionProgress& progress,
                             trace::HeldRanges& grads) {
  const ShardedBucket& bucket = partition.buckets()[b];
  if (bucket.grad_shard.defined()) {
    const auto [begin, end] = own_shard(partition, b);
    grads.paint(begin, end, progress.reduced[b] ? "reduced" : "shard");
  }
  std::int64_t at = bucket.first;
  for (std::size_t p : bucket.members) {
    const Tensor& t = partition.params()[p].second;
    if (t.grad().defined()) grads.paint(at, at + t.numel(), "accumulating", trace::Overlay::separate_buffer);
    at += t.numel();
  }
}

void reduced_frame(const GradientStrategy& s, const Partition& partition, std::size_t b, const std::string& name,
                   ReductionProgress& progress, bool local_freed) {
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
