// L06 — the ZeRO partition planned for 3 ranks without any communication (zero/partition.h): every element
// of every parameter lies in exactly one rank's pieces, each bucket is padded to a multiple of N with less
// than N elements, and rank r's pieces lie in its shard [r·S, (r+1)·S). The multi-rank suites run on 2 and 4
// ranks, where some mistakes (a shard size rounded down, padding given to the wrong rank) do not show.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "zero/partition.h"

using namespace minitorch;
using minitorch::zero::Partition;

TEST(L06_T1_Partition, ThreeRanksCoverEveryElementOnceWithEqualPaddedShards) {
  nn::NamedTensors params;
  const std::vector<std::int64_t> sizes = {7, 5, 3, 11, 2, 13};
  for (std::size_t i = 0; i < sizes.size(); ++i) params.emplace_back(std::string("p").append(std::to_string(i)), Tensor::zeros({sizes[i]}));
  const int N = 3;
  std::map<std::pair<std::size_t, std::int64_t>, int> owners;  // (param, element) -> how many ranks hold it
  std::int64_t padding = -1;
  for (int r = 0; r < N; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + " of " + std::to_string(N));
    Partition part(params, /*bucket_elements=*/12, r, N);
    if (padding < 0) padding = part.padding();
    EXPECT_EQ(part.padding(), padding) << "every rank plans the same buckets";
    std::int64_t total = 0;
    for (const auto& b : part.buckets()) {
      EXPECT_EQ(b.numel % N, 0) << "a bucket is padded to a multiple of N";
      std::int64_t used = 0;
      for (std::size_t p : b.members) used += sizes[p];
      EXPECT_LT(b.numel - used, N) << "less than N elements of padding per bucket";
      EXPECT_GE(b.numel, used);
      total += used;
    }
    EXPECT_EQ(total, 41);
    EXPECT_EQ(part.numel(), 41);
    for (const auto& piece : part.pieces()) {
      const auto& b = part.buckets()[piece.bucket];
      const std::int64_t S = b.numel / N;
      EXPECT_GE(piece.range.begin, r * S) << piece.name << " lies in rank " << r << "'s shard";
      EXPECT_LE(piece.range.end, (r + 1) * S) << piece.name << " lies in rank " << r << "'s shard";
      for (std::int64_t e = 0; e < piece.range.end - piece.range.begin; ++e) ++owners[std::make_pair(piece.param, piece.param_offset + e)];
    }
  }
  for (std::size_t p = 0; p < sizes.size(); ++p)
    for (std::int64_t e = 0; e < sizes[p]; ++e)
      EXPECT_EQ((owners[{p, e}]), 1) << "element " << e << " of p" << p << " is held by " << owners[{p, e}] << " ranks";
}
