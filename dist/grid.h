#pragma once
/// \file grid.h
/// A data × pipeline grid of ranks (docs/design.md §5): `stages` pipeline stages, each held by `dp_size`
/// data-parallel replicas. A rank talks to two sub-groups: its stage's data-parallel group (gradient
/// all-reduce, ZeRO's reduce-scatter / all-gather) and its pipeline (activations, by send / recv).
///
/// How ranks of `world` map to the grid (Megatron-LM's order with no tensor parallelism):
///   stage   = world_rank / dp_size        dp_rank = world_rank % dp_size
/// so consecutive world ranks form one stage's data-parallel group. Why: the data-parallel collectives
/// move the whole model's gradients every step, the pipeline only one micro-batch's activations at a
/// stage boundary; consecutive ranks usually share a node (mpirun fills nodes in rank order), so the
/// heavy traffic stays on the fast links.
///   4 ranks, 2 stages:  stage 0 = world {0, 1}, stage 1 = world {2, 3};
///                       pipelines (same dp_rank) = {0, 2} and {1, 3}.
#include <memory>

#include "dist/process_group.h"

namespace minitorch::dist {

struct Grid {
  /// This stage's data-parallel group: dp_size ranks, this rank is its dp_rank.
  std::shared_ptr<ProcessGroup> data;
  /// This rank's pipeline: `stages` ranks in stage order (pipe->rank() == stage), so the next stage
  /// is pipe rank stage + 1.
  std::shared_ptr<ProcessGroup> pipe;
  int dp_rank = 0, stage = 0, dp_size = 1, stages = 1;
  /// The rank in the world the grid was made from of (stage, dp_rank).
  int world_rank(int stage_of, int dp_rank_of) const { return stage_of * dp_size + dp_rank_of; }
};

/// Splits `world` (any group; collective: every rank of it calls this, in the same order as its other
/// collectives) into `pipeline_stages` stages of world.size() / pipeline_stages data-parallel ranks.
/// Both sub-groups start with world's algorithm and empty stats. Throws std::invalid_argument, on
/// every rank alike and before any communication, unless pipeline_stages ≥ 1 divides world.size().
Grid make_grid(ProcessGroup& world, int pipeline_stages);

}  // namespace minitorch::dist
