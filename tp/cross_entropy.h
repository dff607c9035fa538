#pragma once
/// \file cross_entropy.h
/// The cross-entropy of logits split by vocabulary across a tensor group, without ever gathering the
/// (N, Vp) logits (Megatron's vocab-parallel cross-entropy). Per row i, rank r holds z_i over its columns:
///
///   m_i  = max_j z_ij              local max, then all-reduce(max)           N floats
///   S_i  = sum_j exp(z_ij − m_i)   local sum, then all-reduce(sum)           N floats
///   z_it = z_i[target_i]           the owning rank's value, others 0, all-reduce(sum)   N floats
///   loss = mean_i (log S_i + m_i − z_it)      over rows whose target is not ignore_index
///
/// so three all-reduces of N = B·T floats replace a gather of N·Vp. Backward needs no communication:
/// dz_ij = (exp(z_ij − m_i)/S_i − [j = target_i]) · dloss / count on each rank's own columns.
/// Padded columns (tp/vocab.h) are left out of the max and the sum, and get a zero gradient.
#include <cstdint>

#include "dist/process_group.h"
#include "minitorch/tensor.h"
#include "tp/vocab.h"

namespace minitorch::tp {

/// logits: (N, slice.rows) f32 or bf16, this rank's columns slice.start .. + slice.rows of the padded
/// vocabulary, the first slice.valid real; targets: (N) i32 in [0, V) or ignore_index, the same on every
/// rank -> scalar f32, the same on every rank (nan when every target is ignored, as PyTorch).
/// Its gradient flows to `logits` only, in f32 (like autograd::cross_entropy's).
Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, const VocabSlice& slice,
                                    std::int64_t vocab_size, dist::ProcessGroup& group,
                                    std::int32_t ignore_index = -1);

}  // namespace minitorch::tp
