#pragma once
// Lesson 06's windows on a ZeRO run: who holds which shard (the Partition of every rank, gathered to
// rank 0), the collectives of one step as the event sink saw them, and the model-state bytes each
// rank's allocator holds beside the paper's formula. Only rank 0 prints; every function here that
// takes the group is collective (every rank calls it), the others run on rank 0's data alone.
#include <cstdint>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "minitorch/events.h"
#include "runtime/formulas.h"
#include "zero/partition.h"
#include "zero/strategy.h"

namespace lesson06 {

/// Every rank's `mine` (the same length on each), concatenated in rank order, exactly (each value
/// travels as two floats, so byte counts up to 2^46 survive). Bookkeeping: not in g.stats().
std::vector<std::int64_t> gather(minitorch::dist::ProcessGroup& g, const std::vector<std::int64_t>& mine);

/// The buckets of `part`, then for each bucket the shard every rank owns and the pieces
/// "<param>[a:b]" in it (first ... last). Collective: each rank sends its own pieces.
void print_partition(minitorch::dist::ProcessGroup& world, const minitorch::zero::Partition& part);

/// The comm events that began (one per collective), in the order this rank started them.
std::vector<minitorch::events::Event> collectives(const std::vector<minitorch::events::Event>& recorded);

/// Rank 0's collectives of one step, each beside its ring volume, then the gradient traffic
/// (reduce-scatters + all-gathers) of every rank against `formula_elements`. Collective.
void print_step_traffic(minitorch::dist::ProcessGroup& world, const minitorch::zero::Partition& part,
                        const std::vector<minitorch::events::Event>& recorded, double formula_elements);

/// Rank 0's backward, from its event sink: when each block finished its backward and when each
/// bucket's reduce-scatter started, in ms after the backward began.
void print_backward_timeline(const std::vector<minitorch::events::Event>& recorded);

/// Every rank's model-state bytes as its allocator measured them at the step (param, grad, optim),
/// beside the estimator's exact plan for that rank and the paper's formula for `stage`. Collective.
void print_model_states(minitorch::dist::ProcessGroup& world, int stage,
                        const minitorch::zero::ModelStateBytes& measured,
                        const minitorch::zero::ModelStateBytes& planned, std::int64_t psi,
                        minitorch::runtime::BytesPerParameter b);

/// The ZeRO paper's Table 1 row for Ψ = 7.5B (bf16 mixed precision, K = 12) on 1 to 1024 ranks, from
/// runtime/formulas.h, each cell beside the paper's printed value.
void print_table1_7_5b();

}  // namespace lesson06
