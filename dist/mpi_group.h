#pragma once
/// \file mpi_group.h
/// The Open MPI backend of ProcessGroup (CPU tensors). One MpiGroup per communicator; the world group
/// wraps MPI_COMM_WORLD, split() makes new communicators with MPI_Comm_split. Each group also keeps a
/// duplicate communicator for the hand-written ring, so its messages never meet the user's send/recv.
#include <mpi.h>

#include "dist/process_group.h"

namespace minitorch::dist {

class MpiGroup : public ProcessGroup {
 public:
  /// Wraps `comm`; frees it on destruction when `owned` (never MPI_COMM_WORLD).
  MpiGroup(MPI_Comm comm, bool owned);
  ~MpiGroup() override;
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  void all_reduce(Tensor& t, ReduceOp op = ReduceOp::sum) override;
  std::unique_ptr<Work> all_reduce_async(Tensor& t, ReduceOp op = ReduceOp::sum) override;
  Tensor reduce_scatter(const Tensor& input, ReduceOp op = ReduceOp::sum) override;
  Tensor all_gather(const Tensor& chunk, std::int64_t numel) override;
  void broadcast(Tensor& t, int root) override;
  void send(const Tensor& t, int dst, int tag = 0) override;
  void recv(Tensor& t, int src, int tag = 0) override;
  void barrier() override;
  std::shared_ptr<ProcessGroup> split(int color, int key) override;

  MPI_Comm comm() const { return comm_; }

 private:
  /// The ring's one primitive on this group: MPI_Sendrecv to the right, from the left.
  void ring_shift(const float* send, std::int64_t send_n, float* recv, std::int64_t recv_n);
  /// Sum (then avg) of the f32 buffer `data` over the group, by the selected algorithm.
  void all_reduce_f32(float* data, std::int64_t numel, ReduceOp op);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm ring_comm_ = MPI_COMM_NULL;
  bool owned_ = false;
};

}  // namespace minitorch::dist
