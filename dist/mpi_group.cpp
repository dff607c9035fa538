// The Open MPI backend, part 1: the life of a group, the one place operations start (begin_op),
// all-reduce, broadcast, barrier and split. Reduce-scatter and all-gather are in mpi_collectives.cpp,
// send / recv in mpi_p2p.cpp. bf16 reductions are widened to f32, reduced, and rounded back once.
#include "dist/mpi_group.h"
#include "dist/phase_deadline.h"

#include "minitorch/events.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>

#include "dist/checks.h"

namespace minitorch::dist {

using detail::CollectiveWork;

namespace {

constexpr int kRingTag = 7;  // on the ring's own communicator, so any tag would do

/// MPI's operation for a ReduceOp (avg sums; the division by N follows).
MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::max ? MPI_MAX : MPI_SUM; }

/// data: (numel) f32, in place: the ring all-reduce, dividing this rank's reduced chunk by N between
/// the two phases for avg.
void ring_all_reduce(float* data, std::int64_t numel, int rank, int size, const ring::Shift& shift, ReduceOp op) {
  std::function<void(float*, std::int64_t)> scale;
  if (op == ReduceOp::avg) scale = [size](float* x, std::int64_t n) { detail::divide(x, n, size); };
  ring::all_reduce(data, numel, rank, size, shift, scale);
}

}  // namespace

MpiGroup::MpiGroup(MPI_Comm comm, bool owned, double timeout_s) : comm_(comm), owned_(owned) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  set_timeout(timeout_s);
  {  // collective and blocking: bounded by a watchdog, like MPI_Comm_split
    PhaseDeadline deadline("MPI_Comm_dup (a new group's ring communicator)", timeout_s, world_rank(),
                           not_arrived());
    MPI_Comm_dup(comm_, &ring_comm_);
  }
  // Group rank -> world rank, for the trace's point-to-point events (a sub-group's rank 1 may be world rank 2).
  MPI_Group mine, world;
  MPI_Comm_group(comm_, &mine);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> ranks(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) ranks[static_cast<std::size_t>(r)] = r;
  world_ranks_.resize(ranks.size());
  MPI_Group_translate_ranks(mine, size_, ranks.data(), world, world_ranks_.data());
  MPI_Group_free(&mine);
  MPI_Group_free(&world);
  roll_ = std::make_shared<detail::RollCall>(ring_comm_, rank_, world_ranks_);
  live_groups().push_back(this);
}

MpiGroup::~MpiGroup() {
  auto& live = live_groups();
  live.erase(std::remove(live.begin(), live.end(), this), live.end());
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // MPI_Finalize released every communicator (complete_all_sends ran before it)
  complete_sends();
  roll_->close();  // a Work that outlives its group must not read a freed communicator
  if (ring_comm_ != MPI_COMM_NULL) MPI_Comm_free(&ring_comm_);
  if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::vector<MpiGroup*>& MpiGroup::live_groups() {
  // Never destroyed: the world group is a static destroyed after this function's statics would be.
  static auto* groups = new std::vector<MpiGroup*>();
  return *groups;
}

std::uint64_t MpiGroup::begin_op(const char* op, std::int64_t numel, std::int64_t elements, DType dtype, int peer) {
  progress_sends();
  last_op_ = std::string(op) + " of " + std::to_string(numel) + " elements";
  if (peer >= 0) last_op_ += (std::string(op) == "recv" ? " from rank " : " to rank ") + std::to_string(peer);
  if (peer < 0) roll_->begin_collective(last_op_, current_step_);  // numbers it; a late rank ends here
  record(op, elements, dtype);
  if (!recording() || !events::enabled()) return 0;  // bookkeeping traffic is not step traffic
  events::Event e;
  e.category = events::Category::comm;
  e.kind = events::Kind::begin;
  e.name = op;
  e.elements = elements;
  e.bytes = elements * static_cast<std::int64_t>(dtype_size(dtype));
  e.peer = peer >= 0 ? world_ranks_[static_cast<std::size_t>(peer)] : -1;  // in the world's numbering
  e.group = label();
  e.id = events::next_id();
  events::FlatRange::annotate(e);
  const std::uint64_t id = e.id;
  events::emit(std::move(e));
  return id;
}

namespace {
/// MINITORCH_COMM_TIMEOUT_CAP_S (seconds > 0): an upper bound on every wait, whatever the group's timeout.
/// For test harnesses only (make labs-check, minitorch-grade, docs/labs.md): a lab stub that throws on one
/// rank leaves the others waiting in their next collective, and the job should end in seconds, not in
/// the 300 s a training run allows. Read once; unset or invalid: no bound.
double timeout_cap() {
  static const double cap = [] {
    const char* v = std::getenv("MINITORCH_COMM_TIMEOUT_CAP_S");
    const double x = v ? std::atof(v) : 0.0;
    return x > 0 ? x : std::numeric_limits<double>::infinity();
  }();
  return cap;
}
}  // namespace

detail::WaitContext MpiGroup::wait_context(int peer) const {
  const bool collective = peer < 0;
  return detail::WaitContext{last_op_,
                             peer,
                             size_,
                             std::min(timeout_s_, timeout_cap()),
                             current_step_,
                             roll_,
                             collective ? roll_->begun() : -1,
                             collective ? roll_->began_at() : Clock::now()};
}

void MpiGroup::wait(MPI_Request* requests, int n, std::string what, int peer) const {
  detail::WaitContext ctx = wait_context(peer);
  ctx.what = std::move(what);
  detail::wait_all(requests, n, MPI_STATUSES_IGNORE, ctx);
}

void MpiGroup::ring_shift(const float* send, std::int64_t send_n, float* recv, std::int64_t recv_n) {
  // MPI_Sendrecv's exchange as two non-blocking calls and one wait, so a step has the deadline too.
  const int right = (rank_ + 1) % size_, left = (rank_ - 1 + size_) % size_;
  MPI_Request requests[2];
  MPI_Irecv(recv, detail::mpi_count(recv_n, "ring"), MPI_FLOAT, left, kRingTag, ring_comm_, &requests[0]);
  MPI_Isend(send, detail::mpi_count(send_n, "ring"), MPI_FLOAT, right, kRingTag, ring_comm_, &requests[1]);
  wait(requests, 2, last_op_ + " (ring step: to rank " + std::to_string(right) + ", from rank " + std::to_string(left) + ")");
}

void MpiGroup::all_reduce(Tensor& t, ReduceOp op) {
  detail::check_tensor(t, "all_reduce", /*reduction=*/true);
  const std::int64_t numel = t.numel();
  const std::uint64_t event = begin_op("all_reduce", numel, all_reduce_volume(numel, size_, rank_), t.dtype());
  Tensor buf = t.dtype() == DType::f32 ? t : detail::comm_f32_copy(t);
  float* data = buf.data<float>();
  if (algorithm_ == Algorithm::ring && op != ReduceOp::max) {
    ring_all_reduce(data, numel, rank_, size_, shift(), op);
  } else {
    MPI_Request request = MPI_REQUEST_NULL;  // non-blocking + our wait: the deadline, no spinning
    MPI_Iallreduce(MPI_IN_PLACE, data, detail::mpi_count(numel, "all_reduce"), MPI_FLOAT, mpi_op(op), comm_, &request);
    wait(&request, 1, last_op_);
    if (op == ReduceOp::avg) detail::divide(data, numel, size_);
  }
  if (!buf.same(t)) t.copy_(buf);  // round the f32 sum back to bf16 once
  detail::op_end("all_reduce", event);
}

std::unique_ptr<Work> MpiGroup::all_reduce_async(Tensor& t, ReduceOp op) {
  detail::check_tensor(t, "all_reduce_async", /*reduction=*/true);
  const std::int64_t numel = t.numel();
  const std::uint64_t event = begin_op("all_reduce", numel, all_reduce_volume(numel, size_, rank_), t.dtype());
  Tensor buf = t.dtype() == DType::f32 ? t : detail::comm_f32_copy(t);  // bf16: summed in f32
  if (algorithm_ == Algorithm::ring && op != ReduceOp::max) {  // the teaching ring runs here and now (see the header)
    ring_all_reduce(buf.data<float>(), numel, rank_, size_, shift(), op);
    auto work = std::make_unique<CollectiveWork>("all_reduce", t, buf, /*divide_by=*/0);
    work->event_id = event;
    work->wait();  // no request: finishes at once (copies a bf16 result back)
    return work;
  }
  auto work = std::make_unique<CollectiveWork>("all_reduce", t, buf, op == ReduceOp::avg ? size_ : 0);
  work->event_id = event;
  work->wait_ctx = wait_context();
  MPI_Iallreduce(MPI_IN_PLACE, buf.data<float>(), detail::mpi_count(numel, "all_reduce_async"), MPI_FLOAT, mpi_op(op),
                 comm_, work->request());
  return work;
}

void MpiGroup::broadcast(Tensor& t, int root) {
  detail::check_tensor(t, "broadcast", /*reduction=*/false);
  detail::check_peer(root, size_, "broadcast", "root");
  const std::uint64_t event =
      begin_op("broadcast", t.numel(), broadcast_volume(t.numel(), size_, rank_, root), t.dtype());
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibcast(t.raw_data(), detail::mpi_count(t.numel(), "broadcast"), detail::mpi_type(t.dtype()), root, comm_, &request);
  wait(&request, 1, last_op_ + " from rank " + std::to_string(root));
  detail::op_end("broadcast", event);
}

void MpiGroup::barrier() { named_barrier("barrier"); }

void MpiGroup::named_barrier(const std::string& what) {
  // Not recorded, and it does not wait for buffered sends: a peer may receive them after the barrier.
  progress_sends();
  roll_->begin_collective(what, current_step_);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm_, &request);
  wait(&request, 1, what);
}

std::vector<std::string> MpiGroup::shutdown_exchange(const std::string& mine) {
  constexpr std::size_t kRecord = 128;
  std::vector<char> send(kRecord, '\0'), all(kRecord * static_cast<std::size_t>(size_), '\0');
  mine.copy(send.data(), kRecord - 1);
  const std::string what = "the barrier before MPI_Finalize (the end of the run)";
  roll_->begin_collective(what, current_step_);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgather(send.data(), static_cast<int>(kRecord), MPI_CHAR, all.data(), static_cast<int>(kRecord), MPI_CHAR,
                 comm_, &request);
  wait(&request, 1, what);
  std::vector<std::string> said;
  for (int r = 0; r < size_; ++r) said.emplace_back(all.data() + static_cast<std::size_t>(r) * kRecord);
  return said;
}

int MpiGroup::world_rank() {
  int r = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

std::string MpiGroup::not_arrived() const {
  return "one or more ranks of the group (" + std::to_string(size_) + " ranks) did not arrive";
}

std::shared_ptr<ProcessGroup> MpiGroup::split(int color, int key) {
  // MPI has no non-blocking split: a barrier with the deadline first names a rank that is not there,
  // then a watchdog bounds the split itself (for a rank that stops in between).
  named_barrier("the barrier before MPI_Comm_split (making a process group)");
  MPI_Comm sub = MPI_COMM_NULL;
  {
    PhaseDeadline deadline("MPI_Comm_split (making a process group)", timeout_s_, world_rank(), not_arrived());
    MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub);
  }
  if (sub == MPI_COMM_NULL) return nullptr;
  auto g = std::make_shared<MpiGroup>(sub, /*owned=*/true, timeout_s_);
  g->set_algorithm(algorithm_);
  g->set_current_step(current_step_);
  return g;
}

}  // namespace minitorch::dist
