// The Open MPI backend: argument checks, byte accounting, then one MPI call (or the ring) per
// collective. bf16 reductions are widened to f32, reduced, and rounded back once.
#include "dist/mpi_group.h"

#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "dist/ring.h"
#include "minitorch/allocator.h"

namespace minitorch::dist {

namespace {

constexpr int kRingTag = 7;  // on the ring's own communicator, so any tag would do

/// One clear error for a tensor a collective cannot take.
void check_tensor(const Tensor& t, const char* op, bool reduction) {
  std::string problem;
  if (!t.defined())
    problem = "an undefined tensor";
  else if (!t.device().is_cpu())
    problem = "a tensor on " + t.device().str() + " (the MPI backend takes CPU tensors)";
  else if (!t.is_contiguous())
    problem = "a non-contiguous view (call .contiguous() first)";
  else if (reduction && t.dtype() != DType::f32 && t.dtype() != DType::bf16)
    problem = std::string("dtype ") + dtype_name(t.dtype()) + " (reductions take f32 or bf16)";
  if (!problem.empty())
    throw std::invalid_argument(std::string(op) + ": expected a contiguous CPU tensor, got " + problem +
                                (t.defined() ? ": " + t.describe() : std::string()));
}

int mpi_count(std::int64_t n, const char* op) {
  if (n > INT_MAX)
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(n) + " elements is more than one MPI call takes");
  return static_cast<int>(n);
}

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::f32: return MPI_FLOAT;
    case DType::bf16: return MPI_UINT16_T;  // moved as bits, never summed by MPI
    case DType::i32: return MPI_INT32_T;
  }
  return MPI_BYTE;
}

void check_peer(int peer, int size, const char* op, const char* what) {
  if (peer < 0 || peer >= size)
    throw std::invalid_argument(std::string(op) + ": " + what + " " + std::to_string(peer) +
                                " is not a rank of this group of " + std::to_string(size));
}

/// x /= n element-wise: the one place ReduceOp::avg divides (same on every path, so ring == MPI).
void divide(float* x, std::int64_t count, int n) {
  const float d = static_cast<float>(n);
  for (std::int64_t i = 0; i < count; ++i) x[i] = x[i] / d;
}

/// A contiguous f32 working copy of `t` (widened from bf16), counted as comm memory.
Tensor f32_copy(const Tensor& t) {
  TagScope scope(MemTag::comm);
  return t.dtype() == DType::f32 ? t.clone() : t.to(DType::f32);
}

/// An all-reduce already finished (the ring runs eagerly).
class DoneWork : public Work {
 public:
  void wait() override {}
  bool test() override { return true; }
};

/// MPI_Iallreduce in flight on `buffer` (t itself for f32, a widened copy for bf16).
class MpiAllReduceWork : public Work {
 public:
  MpiAllReduceWork(Tensor t, Tensor staging, ReduceOp op, int n)
      : t_(std::move(t)), staging_(std::move(staging)), op_(op), n_(n) {}
  ~MpiAllReduceWork() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!done_ && !finalized) wait();
  }
  MPI_Request* request() { return &req_; }
  float* buffer() { return (staging_.defined() ? staging_ : t_).data<float>(); }
  void wait() override {
    if (done_) return;
    MPI_Wait(&req_, MPI_STATUS_IGNORE);
    finish();
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    MPI_Test(&req_, &flag, MPI_STATUS_IGNORE);  // also lets MPI move the transfer along
    if (flag) finish();
    return done_;
  }

 private:
  void finish() {
    done_ = true;
    if (op_ == ReduceOp::avg) divide(buffer(), t_.numel(), n_);
    if (staging_.defined()) t_.copy_(staging_);  // round the f32 sum back to bf16 once
  }
  Tensor t_, staging_;
  ReduceOp op_;
  int n_;
  MPI_Request req_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

}  // namespace

MpiGroup::MpiGroup(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm_dup(comm_, &ring_comm_);
}

MpiGroup::~MpiGroup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // MPI_Finalize released every communicator
  if (ring_comm_ != MPI_COMM_NULL) MPI_Comm_free(&ring_comm_);
  if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiGroup::ring_shift(const float* send, std::int64_t send_n, float* recv, std::int64_t recv_n) {
  const int right = (rank_ + 1) % size_, left = (rank_ - 1 + size_) % size_;
  MPI_Sendrecv(send, mpi_count(send_n, "ring"), MPI_FLOAT, right, kRingTag, recv, mpi_count(recv_n, "ring"),
               MPI_FLOAT, left, kRingTag, ring_comm_, MPI_STATUS_IGNORE);
}

void MpiGroup::all_reduce_f32(float* data, std::int64_t numel, ReduceOp op) {
  if (algorithm_ == Algorithm::ring) {
    auto shift = [this](const float* s, std::int64_t sn, float* r, std::int64_t rn) { ring_shift(s, sn, r, rn); };
    std::function<void(float*, std::int64_t)> scale;
    if (op == ReduceOp::avg) scale = [this](float* x, std::int64_t n) { divide(x, n, size_); };
    ring::all_reduce(data, numel, rank_, size_, shift, scale);
    return;
  }
  MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(numel, "all_reduce"), MPI_FLOAT, MPI_SUM, comm_);
  if (op == ReduceOp::avg) divide(data, numel, size_);
}

void MpiGroup::all_reduce(Tensor& t, ReduceOp op) {
  check_tensor(t, "all_reduce", /*reduction=*/true);
  record("all_reduce", all_reduce_volume(t.numel(), size_, rank_), t.dtype());
  if (t.dtype() == DType::f32) {
    all_reduce_f32(t.data<float>(), t.numel(), op);
  } else {
    Tensor wide = f32_copy(t);
    all_reduce_f32(wide.data<float>(), wide.numel(), op);
    t.copy_(wide);
  }
}

std::unique_ptr<Work> MpiGroup::all_reduce_async(Tensor& t, ReduceOp op) {
  check_tensor(t, "all_reduce_async", /*reduction=*/true);
  if (algorithm_ == Algorithm::ring) {  // the teaching ring runs here and now (see the header)
    all_reduce(t, op);
    return std::make_unique<DoneWork>();
  }
  record("all_reduce", all_reduce_volume(t.numel(), size_, rank_), t.dtype());
  Tensor staging = t.dtype() == DType::f32 ? Tensor() : f32_copy(t);
  auto work = std::make_unique<MpiAllReduceWork>(t, staging, op, size_);
  MPI_Iallreduce(MPI_IN_PLACE, work->buffer(), mpi_count(t.numel(), "all_reduce_async"), MPI_FLOAT, MPI_SUM, comm_,
                 work->request());
  return work;
}

Tensor MpiGroup::reduce_scatter(const Tensor& input, ReduceOp op) {
  check_tensor(input, "reduce_scatter", /*reduction=*/true);
  const std::int64_t numel = input.numel();
  const std::int64_t mine = chunk_size(numel, size_, rank_);
  record("reduce_scatter", reduce_scatter_volume(numel, size_, rank_), input.dtype());

  Tensor out;
  if (algorithm_ == Algorithm::ring) {
    Tensor work = f32_copy(input);  // the ring overwrites its buffer; the input is const
    auto shift = [this](const float* s, std::int64_t sn, float* r, std::int64_t rn) { ring_shift(s, sn, r, rn); };
    ring::reduce_scatter(work.data<float>(), numel, rank_, size_, shift);
    out = work.reshape({numel}).narrow(0, chunk_offset(numel, size_, rank_), mine).clone();
  } else {
    Tensor in = input.dtype() == DType::f32 ? input : f32_copy(input);
    std::vector<int> counts(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) counts[static_cast<std::size_t>(r)] = mpi_count(chunk_size(numel, size_, r), "reduce_scatter");
    out = Tensor::empty({mine});
    MPI_Reduce_scatter(in.raw_data(), out.raw_data(), counts.data(), MPI_FLOAT, MPI_SUM, comm_);
  }
  if (op == ReduceOp::avg) divide(out.data<float>(), mine, size_);
  return input.dtype() == DType::f32 ? out : out.to(input.dtype());
}

Tensor MpiGroup::all_gather(const Tensor& chunk, std::int64_t numel) {
  check_tensor(chunk, "all_gather", /*reduction=*/false);
  if (numel < 0) throw std::invalid_argument("all_gather: numel " + std::to_string(numel) + " is negative");
  const std::int64_t mine = chunk_size(numel, size_, rank_);
  if (chunk.numel() != mine)
    throw std::invalid_argument("all_gather: rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                " owns " + std::to_string(mine) + " of " + std::to_string(numel) +
                                " elements, got a chunk of " + std::to_string(chunk.numel()));
  record("all_gather", all_gather_volume(numel, size_, rank_), chunk.dtype());

  const DType dtype = chunk.dtype();
  if (algorithm_ == Algorithm::ring && dtype != DType::i32) {
    // bf16 widens to f32 and back losslessly, so the ring moves floats only.
    Tensor full = [&] {
      TagScope scope(MemTag::comm);
      return Tensor::empty({numel});
    }();
    full.narrow(0, chunk_offset(numel, size_, rank_), mine).copy_(chunk.reshape({mine}));
    auto shift = [this](const float* s, std::int64_t sn, float* r, std::int64_t rn) { ring_shift(s, sn, r, rn); };
    ring::all_gather(full.data<float>(), numel, rank_, size_, shift);
    return dtype == DType::f32 ? full : full.to(dtype);
  }
  // Algorithm::mpi (and i32 chunks under ring): MPI_Allgatherv with the uneven counts.
  std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    counts[static_cast<std::size_t>(r)] = mpi_count(chunk_size(numel, size_, r), "all_gather");
    displs[static_cast<std::size_t>(r)] = mpi_count(chunk_offset(numel, size_, r), "all_gather");
  }
  Tensor out = Tensor::empty({numel}, dtype);
  MPI_Allgatherv(chunk.raw_data(), counts[static_cast<std::size_t>(rank_)], mpi_type(dtype), out.raw_data(),
                 counts.data(), displs.data(), mpi_type(dtype), comm_);
  return out;
}

void MpiGroup::broadcast(Tensor& t, int root) {
  check_tensor(t, "broadcast", /*reduction=*/false);
  check_peer(root, size_, "broadcast", "root");
  record("broadcast", broadcast_volume(t.numel(), size_, rank_, root), t.dtype());
  MPI_Bcast(t.raw_data(), mpi_count(t.numel(), "broadcast"), mpi_type(t.dtype()), root, comm_);
}

void MpiGroup::send(const Tensor& t, int dst, int tag) {
  check_tensor(t, "send", /*reduction=*/false);
  check_peer(dst, size_, "send", "destination");
  if (dst == rank_) throw std::invalid_argument("send: rank " + std::to_string(rank_) + " cannot send to itself");
  if (tag < 0 || tag > 32767) throw std::invalid_argument("send: tag " + std::to_string(tag) + " is not in [0, 32767]");
  record("send", t.numel(), t.dtype());
  MPI_Send(t.raw_data(), mpi_count(t.numel(), "send"), mpi_type(t.dtype()), dst, tag, comm_);
}

void MpiGroup::recv(Tensor& t, int src, int tag) {
  check_tensor(t, "recv", /*reduction=*/false);
  check_peer(src, size_, "recv", "source");
  if (src == rank_) throw std::invalid_argument("recv: rank " + std::to_string(rank_) + " cannot receive from itself");
  if (tag < 0 || tag > 32767) throw std::invalid_argument("recv: tag " + std::to_string(tag) + " is not in [0, 32767]");
  record("recv", 0, t.dtype());  // the stats count what a rank sends
  MPI_Status status;
  MPI_Recv(t.raw_data(), mpi_count(t.numel(), "recv"), mpi_type(t.dtype()), src, tag, comm_, &status);
  int got = 0;
  MPI_Get_count(&status, mpi_type(t.dtype()), &got);
  if (got != t.numel())
    throw std::runtime_error("recv: expected " + std::to_string(t.numel()) + " elements from rank " +
                             std::to_string(src) + ", got " + std::to_string(got));
}

void MpiGroup::barrier() { MPI_Barrier(comm_); }

std::shared_ptr<ProcessGroup> MpiGroup::split(int color, int key) {
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub);
  if (sub == MPI_COMM_NULL) return nullptr;
  auto g = std::make_shared<MpiGroup>(sub, /*owned=*/true);
  g->set_algorithm(algorithm_);
  return g;
}

}  // namespace minitorch::dist
