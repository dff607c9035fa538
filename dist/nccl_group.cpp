// The NCCL process group (nccl_group.h): the collectives on the GPU's default stream, waits with the
// group's deadline. Compiled to "no NCCL in this build" where CUDA or NCCL is missing.
#include "dist/nccl_group.h"

#include <stdexcept>
#include <string>

#if MINITORCH_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "dist/checks.h"
#include "minitorch/not_implemented.h"
#endif

namespace minitorch::dist {

#if !MINITORCH_WITH_NCCL

bool nccl_available() { return false; }

std::shared_ptr<ProcessGroup> make_nccl_group(ProcessGroup&, Device) {
  throw std::runtime_error("NCCL process group: this build has no NCCL (it needs the CUDA layer and nccl.h / libnccl)");
}

#else

bool nccl_available() { return true; }

namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("NCCL group: ") + what + ": " + cudaGetErrorString(e));
}
void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string("NCCL group: ") + what + ": " + ncclGetErrorString(r));
}

class NcclGroup;

// A started operation: the CUDA event recorded after it on the stream.
class NcclWork : public Work {
 public:
  NcclWork(NcclGroup& g, std::string what, Tensor keep, Tensor f32_buf = {}, Tensor result = {});
  ~NcclWork() override;
  void wait() override;
  bool test() override;

 private:
  NcclGroup& g_;
  std::string what_;
  Tensor keep_, f32_buf_, result_;  // alive until finished; a half reduction's f32 buffer and its result
  cudaEvent_t done_ = nullptr;
  bool finished_ = false;
};

class NcclGroup : public ProcessGroup {
 public:
  NcclGroup(std::shared_ptr<ProcessGroup> bootstrap_owned, ProcessGroup& bootstrap, Device device)
      : bootstrap_owned_(std::move(bootstrap_owned)), bootstrap_(bootstrap), device_(device) {
    rank_ = bootstrap.rank();
    size_ = bootstrap.size();
    timeout_s_ = bootstrap.timeout();
    current_step_ = bootstrap.current_step();
    check_cuda(cudaSetDevice(device.index), "cudaSetDevice");
    ncclUniqueId id;
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    // The id travels over the bootstrap group (MPI) as bytes; not step traffic.
    Tensor bytes = Tensor::empty({static_cast<std::int64_t>((sizeof(id) + 3) / 4)}, DType::i32);
    if (rank_ == 0) std::memcpy(bytes.raw_data(), &id, sizeof(id));
    {
      NoRecordScope not_counted(bootstrap);
      bootstrap.broadcast(bytes, 0);
    }
    std::memcpy(&id, bytes.raw_data(), sizeof(id));
    check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
  }
  ~NcclGroup() override {
    if (comm_) ncclCommDestroy(comm_);
  }

  Device device() const override { return device_; }

  void all_reduce(Tensor& t, ReduceOp op) override { all_reduce_async(t, op)->wait(); }

  std::unique_ptr<Work> all_reduce_async(Tensor& t, ReduceOp op) override {
    detail::check_tensor(t, "all_reduce", /*reduction=*/true, nullptr, device_);
    const std::int64_t n = t.numel();
    record("all_reduce", all_reduce_volume(n, size_, rank_), t.dtype());
    // bf16 / f16: summed in f32 and rounded once at the end, as the MPI group does
    Tensor buf = t.dtype() == DType::f32 ? t : t.to(DType::f32);
    begin("all_reduce of " + std::to_string(n) + " elements");
    check_nccl(ncclAllReduce(buf.raw_data(), buf.raw_data(), static_cast<std::size_t>(n), ncclFloat32,
                             op == ReduceOp::avg ? ncclAvg : op == ReduceOp::max ? ncclMax : ncclSum, comm_, stream()),
               "ncclAllReduce");
    return std::make_unique<NcclWork>(*this, last_op_, t, buf.same(t) ? Tensor() : buf, t);
  }

  void broadcast(Tensor& t, int root) override {
    detail::check_tensor(t, "broadcast", /*reduction=*/false, nullptr, device_);
    detail::check_peer(root, size_, "broadcast", "root");
    record("broadcast", broadcast_volume(t.numel(), size_, rank_, root), t.dtype());
    begin("broadcast of " + std::to_string(t.numel()) + " elements from rank " + std::to_string(root));
    check_nccl(ncclBroadcast(t.raw_data(), t.raw_data(), t.nbytes(), ncclChar, root, comm_, stream()), "ncclBroadcast");
    NcclWork(*this, last_op_, t).wait();
  }

  std::unique_ptr<Work> isend(const Tensor&, int, int) override { throw p2p("isend"); }
  std::unique_ptr<Work> irecv(Tensor&, int, int) override { throw p2p("irecv"); }
  void send(const Tensor&, int, int) override { throw p2p("send"); }
  void recv(Tensor&, int, int) override { throw p2p("recv"); }

  void barrier() override {
    Tensor one = Tensor::zeros({1}, DType::f32, device_);
    NoRecordScope not_counted(*this);
    all_reduce(one, ReduceOp::sum);
  }

  std::shared_ptr<ProcessGroup> split(int color, int key) override {
    std::shared_ptr<ProcessGroup> sub = bootstrap_.split(color, key);
    if (!sub) return nullptr;
    auto g = std::make_shared<NcclGroup>(sub, *sub, device_);
    g->set_timeout(timeout_s_);
    g->set_current_step(current_step_);
    return g;
  }

  // Waits for `done` with the group's deadline (nccl_group.h): polls, sleeping a little longer each time.
  void wait_event(cudaEvent_t done, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    auto nap = std::chrono::microseconds(20);
    for (;;) {
      const cudaError_t q = cudaEventQuery(done);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) abort_job(what + ": " + cudaGetErrorString(q));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        abort_job(what + ": NCCL error: " + ncclGetErrorString(async));
      }
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > timeout_s_) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        abort_job(what + " (NCCL) timed out after " + std::to_string(static_cast<int>(timeout_s_)) + " s" +
                  (current_step_ >= 0 ? " at step " + std::to_string(current_step_) : std::string()) +
                  ": a rank of the group did not arrive (comm.timeout_s / --comm-timeout sets the limit)");
      }
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(10000));
    }
  }

  static cudaStream_t stream() { return cudaStreamLegacy; }  // minitorch's kernels' stream

 protected:
  // Chunk r of the (numel) input, reduced onto rank r: one NCCL group call of N reduces.
  std::unique_ptr<Work> start_reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op) override {
    const std::int64_t numel = input.numel();
    record("reduce_scatter", reduce_scatter_volume(numel, size_, rank_), input.dtype());
    // f32 buffers: a half input is summed in f32 and rounded once (the MPI group's rule)
    Tensor in = input.dtype() == DType::f32 ? input : input.to(DType::f32);
    if (in.same(input) && detail::overlaps(output, input)) in = input.clone();  // output inside input: stage it
    Tensor out = output.dtype() == DType::f32 ? output : Tensor::empty(output.shape(), DType::f32, device_);
    begin("reduce_scatter of " + std::to_string(numel) + " elements");
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      const std::int64_t off = chunk_offset(numel, size_, r), count = chunk_size(numel, size_, r);
      if (count == 0) continue;
      // the receive buffer counts at the root only (chunk r's owner)
      check_nccl(ncclReduce(in.data<float>() + off, out.raw_data(), static_cast<std::size_t>(count),
                            ncclFloat32, op == ReduceOp::avg ? ncclAvg : ncclSum, r, comm_, stream()),
                 "ncclReduce");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    if (!out.same(output)) output.copy_(out);  // rounded once into the output's dtype, on the stream
    return std::make_unique<NcclWork>(*this, last_op_, input, in, output);
  }

  // Chunk r broadcast from rank r into every rank's output: one NCCL group call of N broadcasts.
  std::unique_ptr<Work> start_all_gather(Tensor& output, const Tensor& shard) override {
    const std::int64_t numel = output.numel();
    const std::size_t elem = dtype_size(output.dtype());
    record("all_gather", all_gather_volume(numel, size_, rank_), output.dtype());
    begin("all_gather of " + std::to_string(numel) + " elements");
    char* out = static_cast<char*>(output.raw_data());
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      const std::int64_t off = chunk_offset(numel, size_, r), count = chunk_size(numel, size_, r);
      if (count == 0) continue;
      const void* send = r == rank_ ? shard.raw_data() : out + off * elem;
      check_nccl(ncclBroadcast(send, out + off * elem, static_cast<std::size_t>(count) * elem, ncclChar, r, comm_, stream()),
                 "ncclBroadcast");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    return std::make_unique<NcclWork>(*this, last_op_, shard, Tensor(), output);
  }

 private:
  void begin(std::string what) {
    check_cuda(cudaSetDevice(device_.index), "cudaSetDevice");
    last_op_ = std::move(what);
  }
  NotImplemented p2p(const char* op) const {
    return NotImplemented(std::string("NCCL group: ") + op +
                          ": point to point over NCCL is not written yet (dist/nccl_group.h says why); use the MPI group");
  }

  std::shared_ptr<ProcessGroup> bootstrap_owned_;  // a split's own MPI group, kept alive
  ProcessGroup& bootstrap_;
  Device device_;
  ncclComm_t comm_ = nullptr;
  std::string last_op_;
};

NcclWork::NcclWork(NcclGroup& g, std::string what, Tensor keep, Tensor f32_buf, Tensor result)
    : g_(g), what_(std::move(what)), keep_(std::move(keep)), f32_buf_(std::move(f32_buf)), result_(std::move(result)) {
  check_cuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda(cudaEventRecord(done_, NcclGroup::stream()), "cudaEventRecord");
}

NcclWork::~NcclWork() {
  if (!finished_) wait();  // the buffers must outlive the transfer (process_group.h)
  cudaEventDestroy(done_);
}

void NcclWork::wait() {
  if (finished_) return;
  g_.wait_event(done_, what_);
  // all_reduce of a half tensor: the f32 sum, rounded once into it
  if (f32_buf_.defined() && result_.defined() && result_.numel() == f32_buf_.numel() && !f32_buf_.same(result_) &&
      result_.dtype() != DType::f32)
    result_.copy_(f32_buf_);
  finished_ = true;
}

bool NcclWork::test() { return finished_ || cudaEventQuery(done_) == cudaSuccess; }

}  // namespace

std::shared_ptr<ProcessGroup> make_nccl_group(ProcessGroup& bootstrap, Device device) {
  if (!device.is_cuda()) throw std::runtime_error("make_nccl_group: the device must be a CUDA device, got " + device.str());
  return std::make_shared<NcclGroup>(nullptr, bootstrap, device);
}

#endif

}  // namespace minitorch::dist
