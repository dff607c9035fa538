#pragma once
/// \file rank_classes.h
/// Which ranks of a run hold the same bytes, without visiting every rank (minitorch-estimate --config
/// on up to 2^24 ranks). A rank's model-state bytes depend on its rank only through the size of its
/// pieces (zero/partition.h): in a bucket of `used` elements padded to N shards of S, ranks below
/// ⌊used/S⌋ own a whole shard, the next one the rest (maybe nothing) and the ones after it nothing.
/// So the ranks fall into at most 2·buckets + 1 runs of equal piece sizes, and one Partition at each
/// run's first rank gives the bytes of the whole run.
///
/// \code
///   zero::Partition rank0(meta, bucket, /*rank=*/0, world);
///   for (runtime::RankSpan s : runtime::rank_classes({&rank0}))
///     exact_model_states(1, zero::Partition(meta, bucket, s.first, world), b);  // ranks s.first..s.last
/// \endcode
#include <vector>

#include "zero/partition.h"

namespace minitorch::runtime {

/// Ranks first..last (inclusive).
struct RankSpan {
  int first = 0, last = 0;
};

/// The runs of consecutive ranks whose pieces have the same sizes in every bucket of every plan, in
/// rank order, covering 0..world-1. `plans`: partitions of one world (any rank), not empty.
std::vector<RankSpan> rank_classes(const std::vector<const zero::Partition*>& plans);

}  // namespace minitorch::runtime
