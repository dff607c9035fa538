#pragma once
/// \file ring.h
/// The ring collectives, written out by hand (docs/design.md §5): reduce-scatter, all-gather and all-reduce
/// over nothing but "send to my right neighbour, receive from my left". This is the teaching version
/// (ProcessGroup with Algorithm::ring); the MPI library's own collectives do the same job faster.
///
/// N ranks sit on a ring: rank r sends to right(r) = (r + 1) mod N and receives from
/// left(r) = (r − 1) mod N. A buffer of `numel` floats is cut into N chunks (chunk_size /
/// chunk_offset: the first numel % N chunks have one element more); chunk i is owned by rank i.
///
///   reduce_scatter  N−1 steps; afterwards rank r holds the sum over all ranks of chunk r.
///   all_gather      N−1 steps; afterwards every rank holds every rank's chunk.
///   all_reduce      reduce_scatter, then all_gather: 2(N−1) steps.
///
/// Each step every rank sends one chunk and receives one chunk at the same time, so every link of
/// the ring is busy and a rank sends (N−1)/N of the buffer per phase, whatever N is — the reason the
/// ring is bandwidth-optimal and the volume the byte accounting records (process_group.h).
///
/// The functions never touch MPI: the one communication primitive is a `Shift` the caller supplies
/// (ProcessGroup passes MPI_Sendrecv; the single-process tests pass threads and mailboxes). Inside each
/// step the communication comes first and the computation after it, visibly separate.
#include <cstdint>
#include <functional>

namespace minitorch::dist::ring {

/// One ring step for this rank: send `send_n` floats from `send` to the right neighbour and, at the
/// same time, receive `recv_n` floats from the left neighbour into `recv`. Must not deadlock when
/// every rank calls it together (MPI_Sendrecv does both at once). `send` and `recv` never overlap.
using Shift = std::function<void(const float* send, std::int64_t send_n, float* recv, std::int64_t recv_n)>;

/// Which chunk rank `rank` sends / receives at step `step` (0 ≤ step < N−1) of each phase.
int reduce_scatter_send_chunk(int rank, int world, int step);
int reduce_scatter_recv_chunk(int rank, int world, int step);
int all_gather_send_chunk(int rank, int world, int step);
int all_gather_recv_chunk(int rank, int world, int step);

/// input: (numel) floats, this rank's contribution, read only. output: chunk_size(numel, world, rank)
/// floats; afterwards the sum over all ranks of chunk `rank`. Each chunk is summed in a fixed order —
/// starting at its owner's right neighbour and going round the ring — so results are the same run
/// after run. output may be input's own chunk (input + chunk_offset(numel, world, rank): the in-place
/// form below) but no other part of input. Scratch: two chunks (what arrives, what goes out next).
void reduce_scatter(const float* input, float* output, std::int64_t numel, int rank, int world, const Shift& shift);

/// In place: data (numel); afterwards data's chunk `rank` (chunk_offset(numel, world, rank),
/// chunk_size(...) elements) holds the sum over all ranks; the other chunks are left as they were.
void reduce_scatter(float* data, std::int64_t numel, int rank, int world, const Shift& shift);

/// data: (numel) floats whose chunk `rank` is this rank's; afterwards data holds every rank's chunk.
void all_gather(float* data, std::int64_t numel, int rank, int world, const Shift& shift);

/// data: (numel) floats; afterwards every rank holds the element-wise sum over all ranks.
/// `scale_own_chunk` (may be empty) runs between the two phases on this rank's reduced chunk
/// (pointer, count): ProcessGroup divides by N there for ReduceOp::avg.
void all_reduce(float* data, std::int64_t numel, int rank, int world, const Shift& shift,
                const std::function<void(float*, std::int64_t)>& scale_own_chunk = {});

}  // namespace minitorch::dist::ring
