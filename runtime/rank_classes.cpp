#include "runtime/rank_classes.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace minitorch::runtime {

std::vector<RankSpan> rank_classes(const std::vector<const zero::Partition*>& plans) {
  if (plans.empty()) throw std::invalid_argument("rank_classes: no partition");
  const std::int64_t world = plans.front()->world();
  std::vector<std::int64_t> cuts{0, world};  // a run starts at every cut
  for (const zero::Partition* plan : plans) {
    if (plan->world() != world) throw std::invalid_argument("rank_classes: partitions of different worlds");
    for (const zero::ShardedBucket& b : plan->buckets()) {
      std::int64_t used = 0;
      for (std::size_t p : b.members) used += plan->params()[p].second.numel();
      const std::int64_t shard = b.numel / world;
      if (shard == 0) continue;  // nothing to own: every rank alike
      const std::int64_t full = used / shard;  // ranks [0, full) own a whole shard, rank `full` the rest
      cuts.push_back(std::min(full, world));
      cuts.push_back(std::min(full + 1, world));
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<RankSpan> spans;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
    spans.push_back({static_cast<int>(cuts[i]), static_cast<int>(cuts[i + 1] - 1)});
  return spans;
}

}  // namespace minitorch::runtime
