// The Open MPI backend, part 2: the one reduce-scatter and the one all-gather behind every public form
// (collectives.cpp checks the arguments first). Algorithm::mpi starts MPI_Ireduce_scatter /
// MPI_Iallgatherv and returns; Algorithm::ring runs the hand-written ring here and returns a finished
// Work. Either way the data lands in the caller's output: directly for f32 reductions and for gathers
// (any dtype), through an f32 staging buffer for bf16 reductions and bf16 gathers under the ring.
#include <cstring>
#include <vector>

#include "dist/checks.h"
#include "dist/mpi_group.h"

namespace minitorch::dist {

using detail::CollectiveWork;

namespace {

/// Per-rank element counts (and first elements) of the chunk split of `numel` over `size` ranks.
std::vector<int> chunk_counts(std::int64_t numel, int size, const char* op) {
  std::vector<int> counts(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) counts[static_cast<std::size_t>(r)] = detail::mpi_count(chunk_size(numel, size, r), op);
  return counts;
}
std::vector<int> chunk_displs(std::int64_t numel, int size, const char* op) {
  std::vector<int> displs(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) displs[static_cast<std::size_t>(r)] = detail::mpi_count(chunk_offset(numel, size, r), op);
  return displs;
}

/// A flat (numel) view of a contiguous tensor's chunk [offset, offset + count).
Tensor flat_chunk(const Tensor& t, std::int64_t offset, std::int64_t count) {
  return t.view({t.numel()}).narrow(0, offset, count);
}

}  // namespace

// input (numel) f32/bf16; output chunk_size(numel, N, rank) of the same dtype (collectives.cpp checked).
std::unique_ptr<Work> MpiGroup::start_reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op) {
  const std::int64_t numel = input.numel();
  const std::uint64_t event = begin_op("reduce_scatter", numel, reduce_scatter_volume(numel, size_, rank_), input.dtype());
  // What MPI / the ring reads: the input itself when it is f32 and apart from the output, else an f32
  // copy (bf16 is summed in f32; an output inside the input would be overwritten while still read).
  const bool own_input = input.dtype() == DType::f32 && !detail::overlaps(input, output);
  Tensor send = own_input ? input : detail::comm_f32_copy(input);
  // Where the sum lands: the caller's f32 output, or an f32 chunk rounded into a bf16 output at the end.
  Tensor result = output.dtype() == DType::f32 ? output : detail::comm_empty(output.shape(), DType::f32, output.device());
  const int divide_by = op == ReduceOp::avg ? size_ : 0;
  auto work = std::make_unique<CollectiveWork>("reduce_scatter", output, result, divide_by);
  work->event_id = event;
  work->wait_ctx = wait_context();
  work->keep.push_back(send);

  if (algorithm_ == Algorithm::ring) {
    ring::reduce_scatter(send.data<float>(), result.data<float>(), numel, rank_, size_, shift());
    work->wait();  // the ring ran eagerly: finish now (avg, bf16 rounding)
    return work;
  }
  work->counts = chunk_counts(numel, size_, "reduce_scatter");
  MPI_Ireduce_scatter(send.raw_data(), result.raw_data(), work->counts.data(), MPI_FLOAT, MPI_SUM, comm_,
                      work->request());
  return work;
}

// output (numel) of any dtype; shard chunk_size(numel, N, rank) of the same dtype (collectives.cpp checked).
std::unique_ptr<Work> MpiGroup::start_all_gather(Tensor& output, const Tensor& shard) {
  const std::int64_t numel = output.numel();
  const std::int64_t mine = chunk_size(numel, size_, rank_), offset = chunk_offset(numel, size_, rank_);
  const DType dtype = output.dtype();
  const std::uint64_t event = begin_op("all_gather", numel, all_gather_volume(numel, size_, rank_), dtype);
  const bool ring_floats = algorithm_ == Algorithm::ring && dtype != DType::i32;
  // Where the gather happens: the caller's output, or for bf16 under the ring (which moves floats) an
  // f32 staging buffer — bf16 widens to f32 and back losslessly.
  Tensor full = ring_floats && is_half(dtype) ? detail::comm_empty(output.shape(), DType::f32, output.device()) : output;

  // Every rank gathers in place (MPI_IN_PLACE must be used by all ranks or by none): the shard is put
  // at its chunk of `full` first. No copy when it already sits there (ZeRO-3's flat buffer); a shard
  // elsewhere inside the output is copied out first, since it would be overwritten while read.
  Tensor place = flat_chunk(full, offset, mine);
  const bool there = full.same(output) && (mine == 0 || shard.raw_data() == place.raw_data());
  if (!there) {
    Tensor from = shard.view({mine});
    if (detail::overlaps(shard, full)) {
      Tensor staged = detail::comm_empty({mine}, dtype, output.device());
      staged.copy_(from);
      from = staged;
    }
    place.copy_(from);
  }

  auto work = std::make_unique<CollectiveWork>("all_gather", output, full, /*divide_by=*/0);
  work->event_id = event;
  work->wait_ctx = wait_context();
  if (ring_floats) {
    ring::all_gather(full.data<float>(), numel, rank_, size_, shift());
    work->wait();  // the ring ran eagerly: finish now (bf16: copy back)
    return work;
  }
  // Algorithm::mpi (and i32 under the ring): MPI_Iallgatherv with the uneven counts.
  work->counts = chunk_counts(numel, size_, "all_gather");
  work->displs = chunk_displs(numel, size_, "all_gather");
  const MPI_Datatype type = detail::mpi_type(dtype);
  MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, output.raw_data(), work->counts.data(), work->displs.data(), type,
                  comm_, work->request());
  return work;
}

}  // namespace minitorch::dist
