// The MPI backend's shared pieces: element types and counts, comm buffers, and MpiWork — how every
// operation in flight is waited for, tested and finished.
#include "dist/mpi_work.h"

#include "minitorch/events.h"

#include <climits>
#include <exception>
#include <stdexcept>
#include <string>

#include "minitorch/allocator.h"

namespace minitorch::dist::detail {

void op_end(const char* op, std::uint64_t event_id) {
  if (event_id == 0 || !events::enabled()) return;
  events::Event e;
  e.category = events::Category::comm;
  e.kind = events::Kind::end;
  e.name = op;
  e.id = event_id;
  events::emit(std::move(e));
}

int mpi_count(std::int64_t n, const char* op) {
  if (n > INT_MAX)
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(n) + " elements is more than one MPI call takes");
  return static_cast<int>(n);
}

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::f32: return MPI_FLOAT;
    case DType::bf16:
    case DType::f16: return MPI_UINT16_T;  // moved as bits, never summed by MPI (reductions go through f32)
    case DType::i32: return MPI_INT32_T;
  }
  return MPI_BYTE;
}

void divide(float* x, std::int64_t count, int n) {
  const float d = static_cast<float>(n);
  for (std::int64_t i = 0; i < count; ++i) x[i] = x[i] / d;
}

Tensor comm_f32_copy(const Tensor& t) {
  TagScope scope(MemTag::comm);
  return t.dtype() == DType::f32 ? t.clone() : t.to(DType::f32);
}

Tensor comm_empty(const Shape& shape, DType dtype, Device device) {
  TagScope scope(MemTag::comm);
  return Tensor::empty(shape, dtype, device);
}

// ---------------- MpiWork ----------------
MpiWork::~MpiWork() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (done_ || finalized) return;
  try {
    wait();
  } catch (const std::exception& e) {
    abort_job(e.what());
  }
}

void MpiWork::wait() {
  if (done_) return;
  MPI_Status status{};
  wait_all(&request_, 1, &status, wait_ctx);  // never returns on timeout: the job ends there
  complete(status);
}

bool MpiWork::test() {
  if (done_) return true;
  int flag = 0;
  MPI_Status status{};
  MPI_Test(&request_, &flag, &status);  // also lets MPI move the transfer along
  if (flag) complete(status);
  return done_;
}

void MpiWork::complete(const MPI_Status& status) {
  done_ = true;
  std::exception_ptr error;
  try {
    on_complete(status);
  } catch (...) {
    error = std::current_exception();
  }
  op_end(op_, event_id);
  if (error) std::rethrow_exception(error);
}

void CollectiveWork::on_complete(const MPI_Status&) {
  if (divide_by_ > 0) divide(result_.data<float>(), result_.numel(), divide_by_);
  if (!result_.same(output_)) output_.copy_(result_);  // an f32 staging buffer: round to bf16 once
  keep.clear();  // the input and staged buffers are free as soon as the collective is
}

}  // namespace minitorch::dist::detail
