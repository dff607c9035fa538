#pragma once
// What the lessons on several ranks share: rank 0 reads the terminal and the others wait for its answer
// asleep (a student may read a beat for minutes; a spinning wait would eat the cores), and a barrier
// that sleeps too. MPI_COMM_WORLD: the lessons run on the whole job.
#include <mpi.h>

#include <chrono>
#include <thread>

namespace lesson {

/// Waits for `req` in 20 ms naps.
inline void quiet_wait(MPI_Request& req) {
  for (int done = 0; MPI_Test(&req, &done, MPI_STATUS_IGNORE), !done;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

/// Rank 0's `value` on every rank (Beats::on_ranks: what rank 0 read at the prompt).
inline int from_rank0(int value) {
  MPI_Request req;
  MPI_Ibcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  quiet_wait(req);
  return value;
}

/// Every rank of the job has arrived.
inline void quiet_barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  quiet_wait(req);
}

}  // namespace lesson
