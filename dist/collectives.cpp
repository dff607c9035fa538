// The public forms of reduce-scatter and all-gather (blocking / async, allocating / into the caller's
// buffer): each checks its arguments, allocates where it must, and calls the backend's one primitive
// (start_reduce_scatter / start_all_gather). The blocking forms wait on what that returns.
#include <stdexcept>
#include <string>

#include "dist/checks.h"
#include "dist/process_group.h"

namespace minitorch::dist {

namespace {

std::string who(int rank, int size) { return "rank " + std::to_string(rank) + " of " + std::to_string(size); }

/// input: (numel) f32/bf16; output: chunk_size(numel, size, rank) elements of input's dtype.
/// A reduce-scatter sums (or averages): ReduceOp::max is all_reduce's only (process_group.h).
void check_reduce_op(ReduceOp reduce, const char* op) {
  if (reduce == ReduceOp::max)
    throw std::invalid_argument(std::string(op) + ": ReduceOp::max is for all_reduce only (a reduce-scatter sums or averages)");
}

void check_reduce_scatter(const Tensor& output, const Tensor& input, int rank, int size, const char* op, Device dev) {
  detail::check_tensor(input, op, /*reduction=*/true, "input", dev);
  detail::check_tensor(output, op, /*reduction=*/true, "output_shard", dev);
  if (output.dtype() != input.dtype())
    throw std::invalid_argument(std::string(op) + ": output_shard is " + dtype_name(output.dtype()) + " but input is " +
                                dtype_name(input.dtype()) + " (they must match)");
  const std::int64_t mine = chunk_size(input.numel(), size, rank);
  if (output.numel() != mine)
    throw std::invalid_argument(std::string(op) + ": output_shard has " + std::to_string(output.numel()) +
                                " elements, but " + who(rank, size) + " owns " + std::to_string(mine) + " of the input's " +
                                std::to_string(input.numel()));
}

/// output: (numel) of any dtype; shard: chunk_size(numel, size, rank) elements of the same dtype.
void check_all_gather(const Tensor& output, const Tensor& shard, int rank, int size, const char* op, Device dev) {
  detail::check_tensor(shard, op, /*reduction=*/false, "shard", dev);
  detail::check_tensor(output, op, /*reduction=*/false, "output", dev);
  if (output.dtype() != shard.dtype())
    throw std::invalid_argument(std::string(op) + ": output is " + dtype_name(output.dtype()) + " but shard is " +
                                dtype_name(shard.dtype()) + " (they must match)");
  const std::int64_t mine = chunk_size(output.numel(), size, rank);
  if (shard.numel() != mine)
    throw std::invalid_argument(std::string(op) + ": shard has " + std::to_string(shard.numel()) + " elements, but " +
                                who(rank, size) + " owns " + std::to_string(mine) + " of the output's " +
                                std::to_string(output.numel()));
}

/// The chunk an allocating reduce-scatter returns (after checking the input): owned by the caller, so
/// it is tagged with the caller's current MemTag.
Tensor reduce_scatter_output(const Tensor& input, int rank, int size, const char* op, Device dev) {
  detail::check_tensor(input, op, /*reduction=*/true, "input", dev);
  return Tensor::empty({chunk_size(input.numel(), size, rank)}, input.dtype(), dev.is_cpu() ? input.device() : dev);
}

/// The (numel) whole an allocating all-gather returns, after checking the chunk against numel.
Tensor all_gather_output(const Tensor& chunk, std::int64_t numel, int rank, int size, const char* op, Device dev) {
  detail::check_tensor(chunk, op, /*reduction=*/false, "chunk", dev);
  if (numel < 0) throw std::invalid_argument(std::string(op) + ": numel " + std::to_string(numel) + " is negative");
  const std::int64_t mine = chunk_size(numel, size, rank);
  if (chunk.numel() != mine)
    throw std::invalid_argument(std::string(op) + ": " + who(rank, size) + " owns " + std::to_string(mine) + " of " +
                                std::to_string(numel) + " elements, got a chunk of " + std::to_string(chunk.numel()));
  return Tensor::empty({numel}, chunk.dtype(), dev.is_cpu() ? chunk.device() : dev);  // MPI: beside the chunk (cpu or sim)
}

}  // namespace

// ---------------- reduce-scatter ----------------
Tensor ProcessGroup::reduce_scatter(const Tensor& input, ReduceOp op) {
  check_reduce_op(op, "reduce_scatter");
  Tensor out = reduce_scatter_output(input, rank_, size_, "reduce_scatter", device());
  start_reduce_scatter(out, input, op)->wait();
  return out;
}

AsyncTensor ProcessGroup::reduce_scatter_async(const Tensor& input, ReduceOp op) {
  check_reduce_op(op, "reduce_scatter_async");
  AsyncTensor result;
  result.tensor = reduce_scatter_output(input, rank_, size_, "reduce_scatter_async", device());
  result.work = start_reduce_scatter(result.tensor, input, op);
  return result;
}

void ProcessGroup::reduce_scatter_into(Tensor& output_shard, const Tensor& input, ReduceOp op) {
  check_reduce_op(op, "reduce_scatter_into");
  check_reduce_scatter(output_shard, input, rank_, size_, "reduce_scatter_into", device());
  start_reduce_scatter(output_shard, input, op)->wait();
}

std::unique_ptr<Work> ProcessGroup::reduce_scatter_into_async(Tensor& output_shard, const Tensor& input, ReduceOp op) {
  check_reduce_op(op, "reduce_scatter_into_async");
  check_reduce_scatter(output_shard, input, rank_, size_, "reduce_scatter_into_async", device());
  return start_reduce_scatter(output_shard, input, op);
}

// ---------------- all-gather ----------------
Tensor ProcessGroup::all_gather(const Tensor& chunk, std::int64_t numel) {
  Tensor out = all_gather_output(chunk, numel, rank_, size_, "all_gather", device());
  start_all_gather(out, chunk)->wait();
  return out;
}

AsyncTensor ProcessGroup::all_gather_async(const Tensor& chunk, std::int64_t numel) {
  AsyncTensor result;
  result.tensor = all_gather_output(chunk, numel, rank_, size_, "all_gather_async", device());
  result.work = start_all_gather(result.tensor, chunk);
  return result;
}

void ProcessGroup::all_gather_into(Tensor& output, const Tensor& shard) {
  check_all_gather(output, shard, rank_, size_, "all_gather_into", device());
  start_all_gather(output, shard)->wait();
}

std::unique_ptr<Work> ProcessGroup::all_gather_into_async(Tensor& output, const Tensor& shard) {
  check_all_gather(output, shard, rank_, size_, "all_gather_into_async", device());
  return start_all_gather(output, shard);
}

}  // namespace minitorch::dist
