#pragma once
/// \file nccl_group.h
/// A process group over NCCL: the collectives of dist/process_group.h on GPU tensors, one GPU per rank
/// (DeepSpeed's and PyTorch's transport on GPUs: NVLink within a machine, InfiniBand or TCP between).
///
///   ProcessGroup& world = dist::init(&argc, &argv);            // MPI: the ranks, and the bootstrap
///   auto nccl = dist::make_nccl_group(world, Device::cuda(0)); // rank 0's unique id sent over MPI
///   nccl->all_reduce(grad_on_gpu);                             // ncclAllReduce on the GPU's stream
///
/// Built where CUDA and NCCL are found (CMakeLists.txt; here it compiles, the GPU check runs its tests).
/// What it does:
///   - all_reduce, broadcast, reduce_scatter, all_gather (all four forms), barrier, split, stats and
///     timeouts as the MPI group has them; tensors must be contiguous and on the group's GPU;
///   - reduce_scatter and all_gather keep minitorch's uneven split (chunk_size: the first numel % N ranks
///     one element more), which NCCL's own ReduceScatter / AllGather (equal chunks) cannot: each is one
///     NCCL group call of N reduces (chunk r to rank r) or N broadcasts (chunk r from rank r) — the same
///     bytes on the wire as the ring formulas count;
///   - every operation runs on the GPU's default stream, in order with minitorch's kernels; a wait polls
///     its CUDA event with the group's deadline, and past it (or on an asynchronous NCCL error) aborts the
///     communicator and ends the job naming the operation, as the MPI group's waits do;
///   - point to point (send / recv / isend / irecv) is not implemented: it throws minitorch::NotImplemented
///     (the pipeline runs on the MPI group). NCCL's send and receive block the stream until the peer's
///     matching call, so MPI's buffered-send guarantee (a ring of sends before receives cannot deadlock)
///     needs a second stream and communicator; not written yet.
#include <memory>

#include "dist/process_group.h"

namespace minitorch::dist {

/// True when this build has NCCL (compiled with CUDA and NCCL found).
bool nccl_available();

/// A NCCL group of the same ranks as `bootstrap` (an MPI group, which carries NCCL's unique id from its
/// rank 0 to the others), this rank computing on `device` (cuda:N). Collective over `bootstrap`.
/// Throws std::runtime_error when this build has no NCCL or the device is not a CUDA device, and
/// std::runtime_error with NCCL's message when the communicator cannot be made (two ranks on one GPU:
/// NCCL refuses them).
std::shared_ptr<ProcessGroup> make_nccl_group(ProcessGroup& bootstrap, Device device);

}  // namespace minitorch::dist
