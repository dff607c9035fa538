#pragma once
/// \file comm_wait.h
/// How the MPI backend waits (internal to dist/). Every wait in dist/ goes through wait_all: an
/// MPI_Testall loop that sleeps between tests instead of spinning, and gives up at a deadline. Without
/// it a rank that stops (SIGSTOP, a deadlock, a lost peer) hangs the whole job forever while the others
/// burn 100 % CPU in MPI_Wait; with it every waiting rank says what it waited for and takes the job
/// down (abort_job), so mpirun exits non-zero.
///
/// Only waits sleep. Work::test() stays one MPI_Test, so DDP's hooks still move transfers along
/// without ever pausing backward.
#include <mpi.h>

#include <cstdint>
#include <string>

namespace minitorch::dist::detail {

/// What a wait is for, in the words of its timeout message.
struct WaitContext {
  std::string what;        ///< the operation: "all_reduce of 809600 elements", "recv of 4 elements from rank 2"
  int peer = -1;           ///< point to point: the other rank; -1: a collective of the whole group
  int group_size = 1;      ///< ranks in the group
  double timeout_s = 300;  ///< the group's ProcessGroup::timeout()
  std::int64_t step = -1;  ///< the group's current_step(); -1: not known
};

/// How a wait went: finished or not, wall-clock seconds it took, CPU seconds this process used meanwhile.
struct WaitResult {
  bool done = false;
  double wall_s = 0;
  double cpu_s = 0;
};

/// Tests the `n` requests until every one has finished or `timeout_s` seconds have passed. For the
/// first kSpinSeconds it polls as MPI_Wait would (MPI_Testall, then yield the core); after that it
/// sleeps between tests, 50 µs doubling up to 10 ms but never more than a quarter of the time waited
/// so far (so a wait that ends by itself overshoots by at most ~25 %). `statuses` may be
/// MPI_STATUSES_IGNORE. Unfinished requests are left as they are on timeout.
WaitResult wait_for(MPI_Request* requests, int n, MPI_Status* statuses, double timeout_s);

/// Polling without sleeping lasts this long: short waits (most of them) behave exactly as before.
constexpr double kSpinSeconds = 1e-3;

/// The one message of a wait that timed out: the operation, the step, who did not arrive, how long
/// and at what CPU cost this rank waited, and which setting sets the limit.
std::string timeout_message(const WaitContext& ctx, const WaitResult& r);

/// wait_for with ctx.timeout_s; on timeout it calls abort_job(timeout_message(...)), which takes the
/// whole job down. Returns only when every request has finished.
void wait_all(MPI_Request* requests, int n, MPI_Status* statuses, const WaitContext& ctx);

}  // namespace minitorch::dist::detail
