// The Open MPI backend, part 3: point to point. isend / irecv start MPI_Isend / MPI_Irecv and return a
// Work; recv is irecv then wait. send is buffered: it copies the tensor into a staging buffer, starts
// MPI_Isend from it, and keeps the request in the group (pending_sends_) instead of waiting for the
// receiver — the reason two ranks that both send before they receive no longer deadlock. Later calls
// on the group free the sends that have finished; the group's destructor and finalize() wait for the rest.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "dist/checks.h"
#include "dist/mpi_group.h"
#include "minitorch/allocator.h"

namespace minitorch::dist {

namespace {

/// An MPI_Isend in flight from `t` (the caller's tensor, or send's staging copy): keeps it alive.
class SendWork : public detail::MpiWork {
 public:
  explicit SendWork(Tensor t) : MpiWork("send"), t_(std::move(t)) {}

 private:
  Tensor t_;
};

/// An MPI_Irecv in flight into `t`; on completion checks the message filled all of it.
class RecvWork : public detail::MpiWork {
 public:
  RecvWork(Tensor t, int src, const char* name) : MpiWork("recv"), t_(std::move(t)), src_(src), name_(name) {}

 protected:
  void on_complete(const MPI_Status& status) override {
    int got = 0;
    MPI_Get_count(&status, detail::mpi_type(t_.dtype()), &got);
    if (got != t_.numel())
      throw std::runtime_error(std::string(name_) + ": expected " + std::to_string(t_.numel()) +
                               " elements from rank " + std::to_string(src_) + ", got " + std::to_string(got));
  }

 private:
  Tensor t_;
  int src_;
  const char* name_;
};

}  // namespace

std::unique_ptr<detail::MpiWork> MpiGroup::start_send(const Tensor& t, int dst, int tag, const char* name) {
  detail::check_tensor(t, name, /*reduction=*/false);
  detail::check_p2p(dst, tag, rank_, size_, name, "destination");
  const std::uint64_t event = begin_op("send", t.numel(), t.numel(), t.dtype(), dst);
  auto work = std::make_unique<SendWork>(t);
  work->event_id = event;
  work->wait_ctx = wait_context(dst);
  MPI_Isend(t.raw_data(), detail::mpi_count(t.numel(), name), detail::mpi_type(t.dtype()), dst, tag, comm_,
            work->request());
  return work;
}

std::unique_ptr<detail::MpiWork> MpiGroup::start_recv(Tensor& t, int src, int tag, const char* name) {
  detail::check_tensor(t, name, /*reduction=*/false);
  detail::check_p2p(src, tag, rank_, size_, name, "source");
  const std::uint64_t event = begin_op("recv", t.numel(), 0, t.dtype(), src);  // the stats count what a rank sends
  auto work = std::make_unique<RecvWork>(t, src, name);
  work->event_id = event;
  work->wait_ctx = wait_context(src);
  MPI_Irecv(t.raw_data(), detail::mpi_count(t.numel(), name), detail::mpi_type(t.dtype()), src, tag, comm_,
            work->request());
  return work;
}

std::unique_ptr<Work> MpiGroup::isend(const Tensor& t, int dst, int tag) { return start_send(t, dst, tag, "isend"); }

std::unique_ptr<Work> MpiGroup::irecv(Tensor& t, int src, int tag) { return start_recv(t, src, tag, "irecv"); }

void MpiGroup::send(const Tensor& t, int dst, int tag) {
  detail::check_tensor(t, "send", /*reduction=*/false);  // before the copy, so errors name the tensor
  detail::check_p2p(dst, tag, rank_, size_, "send", "destination");
  Tensor staging = [&] {
    TagScope scope(MemTag::comm);
    return t.clone();
  }();
  pending_sends_.push_back(start_send(staging, dst, tag, "send"));
}

void MpiGroup::recv(Tensor& t, int src, int tag) { start_recv(t, src, tag, "recv")->wait(); }

void MpiGroup::progress_sends() {
  std::erase_if(pending_sends_, [](const std::unique_ptr<detail::MpiWork>& w) { return w->test(); });
}

void MpiGroup::complete_sends() {
  for (auto& w : pending_sends_) w->wait();
  pending_sends_.clear();
}

void MpiGroup::complete_all_sends() {
  for (MpiGroup* g : live_groups()) g->complete_sends();
}

}  // namespace minitorch::dist
