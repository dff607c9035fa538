#pragma once
/// \file phase_deadline.h
/// A deadline for the blocking MPI calls that have none of their own. Every collective and receive of a
/// group waits with the comm timeout (comm_wait.h); MPI_Init, MPI_Comm_split, MPI_Comm_dup and
/// MPI_Finalize cannot be made non-blocking, so a rank stopped at start-up or at exit would hang the
/// others there for good. A PhaseDeadline watches such a call from a second thread: if the call has not
/// returned after `seconds`, the watchdog prints
///   rank R: error: PHASE timed out after S s: WHO
/// and ends this process with exit status 1, without touching MPI (MPI is what is stuck). mpirun takes
/// the whole job down when a rank exits non-zero. A `seconds` of dist::kNoLimitSeconds or more
/// (deadline.h) never fires.
///
/// \code
///   {
///     PhaseDeadline deadline("MPI_Comm_split", timeout_s(), rank(), "one or more ranks of the group did not arrive");
///     MPI_Comm_split(comm, color, key, &sub);
///   }   // returned in time: the watchdog stands down
/// \endcode
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace minitorch::dist {

class PhaseDeadline {
 public:
  /// Starts watching. `rank`: the world rank to name (-1: unknown, e.g. before MPI_Init).
  PhaseDeadline(std::string phase, double seconds, int rank, std::string who);
  /// The phase finished: stops the watchdog (and waits for its thread).
  ~PhaseDeadline();
  PhaseDeadline(const PhaseDeadline&) = delete;
  PhaseDeadline& operator=(const PhaseDeadline&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread watchdog_;
};

/// The comm timeout a program was started with, before any config is read (MPI_Init's deadline):
/// `--comm-timeout S` or `--comm-timeout=S` in argv if it is a number > 0, else kDefaultTimeoutSeconds.
double comm_timeout_from_args(int argc, char** argv);

}  // namespace minitorch::dist
