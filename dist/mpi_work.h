#pragma once
/// \file mpi_work.h
/// What the MPI backend's operations share (internal to dist/): the Work of an operation in flight,
/// the MPI element types and counts, and the one place every operation ends (op_end).
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "dist/comm_wait.h"
#include "dist/process_group.h"

namespace minitorch::dist::detail {

/// The one place every operation of an MpiGroup ends: a blocking call just before it returns, an
/// asynchronous one when its Work completes. Emits the comm "end" event paired with the "begin" of
/// MpiGroup::begin_op (`event_id`; 0 = none was emitted).
void op_end(const char* op, std::uint64_t event_id);

/// n as an MPI count; std::invalid_argument naming `op` beyond INT_MAX elements.
int mpi_count(std::int64_t n, const char* op);
/// The MPI type that moves one element of `d` (bf16 moves as 16-bit words, never summed by MPI).
MPI_Datatype mpi_type(DType d);
/// x /= n element-wise: the one place ReduceOp::avg divides (same on every path, so ring == MPI).
void divide(float* x, std::int64_t count, int n);
/// A contiguous f32 working copy of `t` (widened from bf16), counted as comm memory.
Tensor comm_f32_copy(const Tensor& t);
/// An uninitialised buffer counted as comm memory.
Tensor comm_empty(const Shape& shape, DType dtype, Device device);

/// One operation on an MpiGroup, with at most one MPI request (MPI_REQUEST_NULL for work that already
/// ran, e.g. the eager ring: then the first wait() or test() completes it). wait() backs off between
/// tests and ends the job after wait_ctx.timeout_s (comm_wait.h); test() is one MPI_Test. Completing runs
/// on_complete() once, then op_end(). Destroying an unfinished MpiWork waits for it; an error at
/// that point takes the job down (abort_job), since a destructor cannot throw.
class MpiWork : public Work {
 public:
  /// `op`: a string literal naming the operation ("reduce_scatter", "send", ...).
  explicit MpiWork(const char* op) : op_(op) {}
  ~MpiWork() override;
  MpiWork(const MpiWork&) = delete;
  MpiWork& operator=(const MpiWork&) = delete;
  void wait() override;
  bool test() override;
  /// The request the operation's MPI_I* call fills in.
  MPI_Request* request() { return &request_; }
  /// The id of the operation's "begin" event (MpiGroup::begin_op), closed when it completes.
  std::uint64_t event_id = 0;
  /// What wait() waits for and how long (MpiGroup::wait_context): past the deadline it ends the job.
  WaitContext wait_ctx;

 protected:
  /// After MPI has finished the request: the operation's last step on this rank (divide for avg, copy
  /// a staging buffer back, check a received size). May throw.
  virtual void on_complete(const MPI_Status& /*status*/) {}

 private:
  void complete(const MPI_Status& status);
  const char* op_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

/// A reduction or gather whose data lands in `result`: the caller's `output` itself, or (for bf16
/// reductions) an f32 staging buffer of output's shape. On completion a non-zero `divide_by` divides
/// result (ReduceOp::avg), then a staging result is copied — rounded once — into output.
class CollectiveWork : public MpiWork {
 public:
  CollectiveWork(const char* op, Tensor output, Tensor result, int divide_by)
      : MpiWork(op), output_(std::move(output)), result_(std::move(result)), divide_by_(divide_by) {}
  const Tensor& result() const { return result_; }
  std::vector<Tensor> keep;          ///< buffers MPI reads until completion (the input, a staged input)
  std::vector<int> counts, displs;   ///< MPI reads these arrays until completion too

 protected:
  void on_complete(const MPI_Status& status) override;

 private:
  Tensor output_, result_;
  int divide_by_;
};

}  // namespace minitorch::dist::detail
