#pragma once
/// \file checks.h
/// Argument checks shared by the collectives (internal to dist/): each throws one
/// std::invalid_argument that names the operation and what was wrong, before any communication.
#include <string>

#include "minitorch/tensor.h"

namespace minitorch::dist::detail {

/// `t` must be a defined, contiguous tensor on `device` (the group's: the CPU for MPI, its GPU for NCCL);
/// for a reduction also f32, bf16 or f16. `arg` (optional) names the argument in the message:
/// "reduce_scatter_into: output_shard: expected a contiguous ...".
void check_tensor(const Tensor& t, const char* op, bool reduction, const char* arg = nullptr,
                  Device device = Device::cpu());

/// `peer` must be a rank of a group of `size`; `what` says which ("root", "destination", ...).
void check_peer(int peer, int size, const char* op, const char* what);

/// A point-to-point peer and tag: a rank of the group other than `rank`, a tag in [0, 32767]
/// (the smallest upper bound MPI guarantees).
void check_p2p(int peer, int tag, int rank, int size, const char* op, const char* what);

/// True when the bytes of `a` and `b` share memory (same storage, intersecting byte ranges).
bool overlaps(const Tensor& a, const Tensor& b);

}  // namespace minitorch::dist::detail
