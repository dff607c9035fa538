#pragma once
// Lesson 05's window on the ring collectives of dist/ring.h. Those functions communicate through one
// primitive the caller supplies (ring::Shift: send to the right neighbour, receive from the left);
// here that primitive is the world group's own point-to-point isend / irecv, so every message the ring
// sends is counted by world.stats() with the length it really had, and what moved can be printed.
#include <cstdint>
#include <vector>

#include "common/beat.h"
#include "dist/process_group.h"
#include "dist/ring.h"

namespace lesson05 {

/// Every rank's `mine` (the same length on each), concatenated in rank order. Bookkeeping for the
/// printout: not recorded in g.stats().
std::vector<float> gather(minitorch::dist::ProcessGroup& g, const std::vector<float>& mine);

/// What one ring step moved on this rank.
struct RingStep {
  std::vector<float> sent, received;
};

/// The ring's Shift over g.isend (to rank + 1) and g.irecv (from rank − 1): g.stats() records each send
/// with its real length. Appends what moved to *seen unless seen is null.
minitorch::dist::ring::Shift counted_shift(minitorch::dist::ProcessGroup& g, std::vector<RingStep>* seen);

/// Three beats: reduce-scatter step by step, all-gather step by step (on 2N floats per rank), then the
/// bytes each rank's counter measured against (N−1)/N·numel·4 per phase and 2(N−1)/N·numel·4 in all.
void ring_beats(lesson::Beats& beats, minitorch::dist::ProcessGroup& world);

}  // namespace lesson05
