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
#include <functional>
#include <memory>
#include <string>

#include "dist/roll_call.h"

namespace minitorch::dist::detail {

/// What a wait is for, in the words of its timeout message.
struct WaitContext {
  std::string what;        ///< the operation: "all_reduce of 809600 elements", "recv of 4 elements from rank 2"
  int peer = -1;           ///< point to point: the other rank; -1: a collective of the whole group
  int group_size = 1;      ///< ranks in the group
  double timeout_s = 300;  ///< the group's ProcessGroup::timeout()
  std::int64_t step = -1;  ///< the group's current_step(); -1: not known
  std::shared_ptr<RollCall> roll = nullptr;  ///< the group's roll-call channel (roll_call.h); null: none
  std::int64_t seq = -1;                     ///< the collective's number in its group; -1: a send or receive
  Clock::time_point began = Clock::now();    ///< when this rank began the operation
};

/// How a wait went: finished or not, wall-clock seconds it took, CPU seconds this process used meanwhile.
struct WaitResult {
  bool done = false;
  double wall_s = 0;
  double cpu_s = 0;
};

/// Called between the tests of a long wait; `woke`: this rank had not run for kStoppedSeconds (a stop).
using BetweenTests = std::function<void(bool woke)>;

/// Tests the `n` requests until every one has finished or `timeout_s` seconds have passed (a deadline
/// from deadline.h: kNoLimitSeconds or more never passes). For the first kSpinSeconds it polls as
/// MPI_Wait would (MPI_Testall, then yield the core); after that it sleeps between tests, 50 µs doubling
/// up to 10 ms but never more than a quarter of the time waited so far (so a wait that ends by itself
/// overshoots by at most ~25 %), and calls `between` after each sleep. A rank that was itself stopped
/// (kStoppedSeconds between two tests) starts its deadline again when it wakes: the time it did not run
/// is not the others' delay. At the deadline it tests once more before it gives up. `statuses` may be
/// MPI_STATUSES_IGNORE. Unfinished requests are left as they are on timeout.
WaitResult wait_for(MPI_Request* requests, int n, MPI_Status* statuses, double timeout_s,
                    const BetweenTests& between = {});

/// Polling without sleeping lasts this long: short waits (most of them) behave exactly as before.
constexpr double kSpinSeconds = 1e-3;
/// Two tests of a wait at most ~10 ms apart; this long between them means the rank was not running.
constexpr double kStoppedSeconds = 1.0;

/// The one message of a wait that timed out: the operation, the step, who did not arrive (the peer;
/// for a collective what the roll call found, `absent`), how long and at what CPU cost this rank
/// waited, and which setting sets the limit.
std::string timeout_message(const WaitContext& ctx, const WaitResult& r, const Absent& absent = {});

/// wait_for with ctx.timeout_s, answering the group's roll call between tests; on timeout it calls the
/// roll (roll_call.h), then abort_job(timeout_message(...)), which takes the whole job down. Returns only
/// when every request has finished.
void wait_all(MPI_Request* requests, int n, MPI_Status* statuses, const WaitContext& ctx);

}  // namespace minitorch::dist::detail
