#pragma once
// What the lessons on several ranks share: rank 0 reads the terminal and the others wait for its answer
// asleep (a student may read a beat for minutes; a spinning wait would eat the cores), and a barrier
// that sleeps too. MPI_COMM_WORLD: the lessons run on the whole job. And the main() they share.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "common/beat.h"
#include "dist/process_group.h"

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

/// The main() of a lesson on several ranks (under mpirun; 1 rank works too): every rank runs the beats, rank 0
/// alone prints and reads the prompt for all, and an error on one rank ends the whole job instead of leaving the
/// others waiting in a collective. `options` declares the lesson's options on `beats`; `body` runs the beats.
inline int main_on_ranks(int argc, char** argv, const std::string& title, int total,
                         const std::function<void(Beats&)>& options,
                         const std::function<int(Beats&, minitorch::dist::ProcessGroup&)>& body) {
  minitorch::dist::ProcessGroup& world = minitorch::dist::init(&argc, &argv);
  if (world.rank() != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;  // rank 0 prints for everyone
  Beats beats(title, total);
  options(beats);
  if (world.size() > 1) beats.on_ranks(world.rank(), from_rank0);
  return beats.run(argc, argv, [&] { return body(beats, world); },
                   [](const std::string& what) { minitorch::dist::abort_job(what, 1); });
}

}  // namespace lesson
