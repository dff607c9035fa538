#pragma once
/// \file mpi_group.h
/// The Open MPI backend of ProcessGroup (CPU tensors). One MpiGroup per communicator; the world group
/// wraps MPI_COMM_WORLD, split() makes new communicators with MPI_Comm_split. Each group also keeps a
/// duplicate communicator for the hand-written ring, so its messages never meet the user's send/recv.
///
/// The code is in three files: mpi_group.cpp (life of a group, all-reduce, broadcast, barrier, split),
/// mpi_collectives.cpp (reduce-scatter and all-gather), mpi_p2p.cpp (send / recv, buffered sends).
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "dist/mpi_work.h"
#include "dist/process_group.h"
#include "dist/ring.h"

namespace minitorch::dist {

class MpiGroup : public ProcessGroup {
 public:
  /// Wraps `comm`; frees it on destruction when `owned` (never MPI_COMM_WORLD). Destruction first
  /// waits for this group's buffered sends. `timeout_s`: the group's comm timeout, which also bounds
  /// the MPI_Comm_dup made here (dist/phase_deadline.h).
  MpiGroup(MPI_Comm comm, bool owned, double timeout_s = kDefaultTimeoutSeconds);
  ~MpiGroup() override;
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  void all_reduce(Tensor& t, ReduceOp op = ReduceOp::sum) override;
  std::unique_ptr<Work> all_reduce_async(Tensor& t, ReduceOp op = ReduceOp::sum) override;
  void broadcast(Tensor& t, int root) override;
  std::unique_ptr<Work> isend(const Tensor& t, int dst, int tag = 0) override;
  std::unique_ptr<Work> irecv(Tensor& t, int src, int tag = 0) override;
  void send(const Tensor& t, int dst, int tag = 0) override;
  void recv(Tensor& t, int src, int tag = 0) override;
  void barrier() override;
  /// The barrier before MPI_Finalize (dist::finalize), which also tells every rank what each one says
  /// (`mine`, at most 127 bytes: its host and pid, for dist/exit_watch.h). An all-gather of plain bytes,
  /// no tensors: it runs at exit, when static objects (the allocator's) may already be gone. Its
  /// timeout message says it was the end of the run.
  std::vector<std::string> shutdown_exchange(const std::string& mine);
  std::shared_ptr<ProcessGroup> split(int color, int key) override;

  MPI_Comm comm() const { return comm_; }
  /// Buffered sends of this group still in flight (their staging buffers are alive).
  std::size_t pending_sends() const { return pending_sends_.size(); }
  /// Waits for the buffered sends of every live MpiGroup: finalize() calls it, since MPI_Finalize
  /// needs every request complete.
  static void complete_all_sends();

 protected:
  std::unique_ptr<Work> start_reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op) override;
  std::unique_ptr<Work> start_all_gather(Tensor& output, const Tensor& shard) override;

 private:
  /// This process's rank in MPI_COMM_WORLD (named by the watchdogs' messages).
  static int world_rank();
  /// A barrier whose timeout message names `what` (barrier(), and before MPI_Comm_split).
  void named_barrier(const std::string& what);
  /// "one or more ranks of the group (N ranks) did not arrive": who a blocked collective waits for.
  std::string not_arrived() const;
  /// The one place every operation starts: frees the buffered sends that have finished, records the
  /// operation (ProcessGroup::record) and, if it was recorded and a sink listens, emits its comm
  /// "begin" event (op, elements, bytes, peer, the thread's events::FlatRange). Returns the event id
  /// that detail::op_end closes (0: no event).
  /// `numel` (the tensor's elements) and `peer` also describe the operation for a timeout message.
  std::uint64_t begin_op(const char* op, std::int64_t numel, std::int64_t elements, DType dtype, int peer = -1);
  /// What a wait of the operation begun last needs: its description, this group's timeout and step.
  detail::WaitContext wait_context(int peer = -1) const;
  /// Waits for `n` requests with this group's deadline (comm_wait.h); `what` names the operation.
  void wait(MPI_Request* requests, int n, std::string what, int peer = -1) const;
  /// The ring's one primitive on this group: MPI_Isend to the right, MPI_Irecv from the left, one wait.
  void ring_shift(const float* send, std::int64_t send_n, float* recv, std::int64_t recv_n);
  /// ring_shift as the ring::Shift the functions of dist/ring.h take.
  ring::Shift shift() {
    return [this](const float* s, std::int64_t sn, float* r, std::int64_t rn) { ring_shift(s, sn, r, rn); };
  }
  /// Starts MPI_Isend of `t` (checked; `name` is the caller's, for errors) and records a "send".
  std::unique_ptr<detail::MpiWork> start_send(const Tensor& t, int dst, int tag, const char* name);
  /// Starts MPI_Irecv into `t` (checked) and records a "recv" of 0 elements.
  std::unique_ptr<detail::MpiWork> start_recv(Tensor& t, int src, int tag, const char* name);
  /// MPI_Test on each buffered send; drops the finished ones (and their staging buffers).
  void progress_sends();
  /// Waits for every buffered send of this group.
  void complete_sends();
  /// Every MpiGroup alive in this process (complete_all_sends walks it).
  static std::vector<MpiGroup*>& live_groups();

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm ring_comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  std::vector<int> world_ranks_;  // [group rank] = its rank in MPI_COMM_WORLD
  std::string last_op_ = "operation";  // "all_reduce of 809600 elements": the one begin_op started last
  std::vector<std::unique_ptr<detail::MpiWork>> pending_sends_;  // buffered sends, oldest first
  std::shared_ptr<detail::RollCall> roll_;  // who is in a collective that timed out (roll_call.h)
};

}  // namespace minitorch::dist
