#pragma once
/// \file grid.h
/// A data × pipeline × tensor grid of ranks (docs/design.md §5, §14): `stages` pipeline stages, each held
/// by `dp_size` data-parallel replicas, each replica split over `tp_size` tensor-parallel ranks. A rank
/// talks to three sub-groups: its tensor group (the all-reduces inside every block, tp/), its data-parallel
/// group (gradient all-reduce, ZeRO's reduce-scatter / all-gather) and its pipeline (activations, by send /
/// recv).
///
/// How ranks of `world` map to the grid (Megatron-LM's order: tensor ranks adjacent):
///   tp_rank = w mod t        dp_rank = (w / t) mod d        stage = w / (t·d)
/// Why this order: tensor parallelism all-reduces activations twice per block, forward and backward, the
/// most traffic of the three, so its ranks are neighbours (mpirun fills nodes in rank order: one node's
/// fast links); the data-parallel collectives move the gradients once a step; the pipeline only one
/// micro-batch's activations at a stage boundary. With t = 1 this is the data × pipeline grid:
///   4 ranks, 2 stages:        stage 0 = world {0, 1}, stage 1 = world {2, 3};
///                             pipelines (same dp_rank) = {0, 2} and {1, 3}.
///   8 ranks, 2 stages, t = 2: tensor groups {0, 1} {2, 3} {4, 5} {6, 7}; data groups {0, 2} {1, 3} {4, 6}
///                             {5, 7}; pipelines {0, 4} {1, 5} {2, 6} {3, 7}.
#include <memory>

#include "dist/process_group.h"

namespace minitorch::dist {

struct Grid {
  /// The data-parallel group of this (stage, tp_rank): dp_size ranks, this rank is its dp_rank.
  std::shared_ptr<ProcessGroup> data;
  /// This rank's pipeline: `stages` ranks in stage order (pipe->rank() == stage), so the next stage
  /// is pipe rank stage + 1.
  std::shared_ptr<ProcessGroup> pipe;
  /// This replica's tensor group at this stage: tp_size adjacent ranks, this rank is its tp_rank (a group
  /// of one when tp_size is 1).
  std::shared_ptr<ProcessGroup> tensor;
  int dp_rank = 0, stage = 0, tp_rank = 0, dp_size = 1, stages = 1, tp_size = 1;
  /// The rank in the world the grid was made from of (stage, dp_rank, tp_rank).
  int world_rank(int stage_of, int dp_rank_of, int tp_rank_of = 0) const {
    return (stage_of * dp_size + dp_rank_of) * tp_size + tp_rank_of;
  }
};

/// Splits `world` (any group; collective: every rank of it calls this, in the same order as its other
/// collectives) into `pipeline_stages` stages × world.size() / (pipeline_stages · tensor_size) data-parallel
/// replicas × `tensor_size` tensor ranks. The three sub-groups start with world's algorithm and empty
/// stats. Throws std::invalid_argument, on every rank alike and before any communication, unless both are
/// ≥ 1 and pipeline_stages · tensor_size divides world.size().
Grid make_grid(ProcessGroup& world, int pipeline_stages, int tensor_size = 1);

}  // namespace minitorch::dist
