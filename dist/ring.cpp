// The ring collectives step by step (see ring.h for the picture).
//
// A worked example, N = 3 ranks, numel = 7: chunks 0, 1, 2 have 3, 2, 2 elements (the first
// 7 % 3 = 1 chunk gets the extra one) at offsets 0, 3, 5. Write a_i, b_i, c_i for chunk i on ranks
// 0, 1, 2.
//
//   reduce-scatter, step 0: rank 0 sends chunk 2 → rank 1    rank 1 adds: a2 + b2      (recv + own)
//                           rank 1 sends chunk 0 → rank 2    rank 2 adds: b0 + c0
//                           rank 2 sends chunk 1 → rank 0    rank 0 adds: c1 + a1
//                   step 1: rank 0 sends chunk 1 → rank 1    rank 1 adds: (c1 + a1) + b1  = chunk 1 done
//                           rank 1 sends chunk 2 → rank 2    rank 2 adds: (a2 + b2) + c2  = chunk 2 done
//                           rank 2 sends chunk 0 → rank 0    rank 0 adds: (b0 + c0) + a0  = chunk 0 done
//   all-gather,     step 0: rank r sends its finished chunk r to the right, receives chunk r−1;
//                   step 1: rank r forwards chunk r−1 to the right, receives chunk r−2. Done.
#include "dist/ring.h"

#include <algorithm>
#include <vector>

#include "dist/process_group.h"
#include "minitorch/not_implemented.h"

namespace minitorch::dist::ring {

namespace {
int mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

// Reduce-scatter: at step s rank r sends chunk (r − 1 − s) and receives chunk (r − 2 − s). After
// N−1 steps the last chunk it received and added, (r − 2 − (N−2)) = (r − N) ≡ r, is complete: every
// rank has added its term. Over the phase rank r sends every chunk except its own.
int reduce_scatter_send_chunk(int rank, int world, int step) { return mod(rank - 1 - step, world); }
int reduce_scatter_recv_chunk(int rank, int world, int step) { return mod(rank - 2 - step, world); }
// All-gather: at step s rank r forwards chunk (r − s) — its own at step 0, then the one it has just
// received — and receives chunk (r − 1 − s). Over the phase it sends every chunk except (r + 1)'s.
int all_gather_send_chunk(int rank, int world, int step) { return mod(rank - step, world); }
int all_gather_recv_chunk(int rank, int world, int step) { return mod(rank - 1 - step, world); }

void reduce_scatter(const float* input, float* output, std::int64_t numel, int rank, int world, const Shift& shift) {
  // Shapes: input (numel), chunk i = input[chunk_offset(i) .. + chunk_size(i)]; output (chunk_size(rank));
  // incoming and partial: the largest chunk (chunk 0).
  const std::int64_t own_n = chunk_size(numel, world, rank);
  const float* own_in = input + chunk_offset(numel, world, rank);
  if (world == 1) {  // one rank: its data is already the sum
    if (output != own_in) std::copy(own_in, own_in + own_n, output);
    return;
  }
  // BEGIN SOLUTION L05.1
  const std::size_t largest = static_cast<std::size_t>(chunk_size(numel, world, 0));
  std::vector<float> incoming(largest), partial(largest);
  // Step 0 sends this rank's own term of a chunk, straight from the input; later steps send the
  // partial sum made at the step before (the chunk received then is the one sent now).
  const float* outgoing = input + chunk_offset(numel, world, reduce_scatter_send_chunk(rank, world, 0));
  for (int step = 0; step < world - 1; ++step) {
    const int send_c = reduce_scatter_send_chunk(rank, world, step);
    const int recv_c = reduce_scatter_recv_chunk(rank, world, step);
    const std::int64_t recv_n = chunk_size(numel, world, recv_c);

    // communication: my partial sum of chunk send_c goes right; the left neighbour's of recv_c comes in.
    shift(outgoing, chunk_size(numel, world, send_c), incoming.data(), recv_n);

    // computation: add my own contribution to what arrived (received + own, always in this order).
    // The last step completes chunk `rank`: that sum goes to the output.
    float* sum = step == world - 2 ? output : partial.data();
    const float* own = input + chunk_offset(numel, world, recv_c);
    for (std::int64_t i = 0; i < recv_n; ++i) sum[i] = incoming[static_cast<std::size_t>(i)] + own[i];
    outgoing = partial.data();
  }
  // END SOLUTION
}

void reduce_scatter(float* data, std::int64_t numel, int rank, int world, const Shift& shift) {
  // The sum of chunk `rank` is written over this rank's own term of it, read for the last time there.
  reduce_scatter(data, data + chunk_offset(numel, world, rank), numel, rank, world, shift);
}

void all_gather(float* data, std::int64_t numel, int rank, int world, const Shift& shift) {
  // Shapes: data (numel); chunk `rank` is filled on entry, every chunk on return. No computation:
  // each received chunk lands directly in its place and is forwarded at the next step.
  // BEGIN SOLUTION L05.2
  for (int step = 0; step < world - 1; ++step) {
    const int send_c = all_gather_send_chunk(rank, world, step);
    const int recv_c = all_gather_recv_chunk(rank, world, step);
    // communication only
    shift(data + chunk_offset(numel, world, send_c), chunk_size(numel, world, send_c),
          data + chunk_offset(numel, world, recv_c), chunk_size(numel, world, recv_c));
  }
  // END SOLUTION
}

void all_reduce(float* data, std::int64_t numel, int rank, int world, const Shift& shift,
                const std::function<void(float*, std::int64_t)>& scale_own_chunk) {
  // BEGIN SOLUTION L05.3
  // Phase 1 (N−1 steps): rank r ends with the full sum of chunk r.
  reduce_scatter(data, numel, rank, world, shift);
  // Between the phases: only N·(chunk) work per rank instead of N·numel, e.g. the division for avg.
  if (scale_own_chunk) scale_own_chunk(data + chunk_offset(numel, world, rank), chunk_size(numel, world, rank));
  // Phase 2 (N−1 steps): every rank collects every finished chunk.
  all_gather(data, numel, rank, world, shift);
  // END SOLUTION
}

}  // namespace minitorch::dist::ring
