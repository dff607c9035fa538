// Test-only program (tests/dist/test_rank_failure.cpp runs it under mpirun): the last rank stops or
// dies while the others wait for it. The job must end non-zero — by the communication timeout for a
// stopped rank, by Open MPI for a killed one — with a message naming the operation, never hang.
//   mt-rank-stalls stop SECONDS       the last rank SIGSTOPs itself before an all-reduce (MPI's)
//   mt-rank-stalls stop_ring SECONDS  the same with the hand-written ring (its Isend/Irecv waits)
//   mt-rank-stalls recv SECONDS       rank 0 waits in recv for the last rank, which SIGSTOPs itself
//   mt-rank-stalls barrier SECONDS    the last rank SIGSTOPs itself before a barrier
//   mt-rank-stalls kill SECONDS       the last rank SIGKILLs itself before an all-reduce
//   mt-rank-stalls ok SECONDS         nobody stops: exit 0
//   mt-rank-stalls stall SECONDS [WAKE]  rank 1 (not the last) SIGSTOPs itself before an all-reduce; with
//                                     WAKE, a helper process resumes it (SIGCONT) WAKE seconds later
// The blocking calls without a deadline of their own (dist/phase_deadline.h):
//   mt-rank-stalls stop_init SECONDS --comm-timeout SECONDS   the last rank SIGSTOPs itself before MPI_Init
//   mt-rank-stalls stop_split SECONDS  the last rank SIGSTOPs itself before a split (MPI_Comm_split)
//   mt-rank-stalls stop_exit SECONDS   the last rank SIGSTOPs itself after its work, before MPI_Finalize
//   mt-rank-stalls stop_late SECONDS   the last rank SIGSTOPs itself after MPI_Finalize, before it exits
// The timeout is SECONDS; the step is set to 3, so the message says "at step 3".
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dist/process_group.h"

namespace dist = minitorch::dist;
using minitorch::Tensor;

namespace {
constexpr std::int64_t kElements = 809600;

void stop_myself(int rank) {
  std::fprintf(stderr, "rank %d stops on purpose\n", rank);
  std::fflush(stderr);
  std::raise(SIGSTOP);
}

// Rank 1 stops; with wake_s > 0 a forked helper (which never touches MPI) sends it SIGCONT then: a rank
// that was stopped or too slow, and comes back after the others gave up.
void stall_rank_1(double wake_s) {
  if (wake_s > 0 && ::fork() == 0) {
    const pid_t parent = ::getppid();
    ::usleep(static_cast<useconds_t>(wake_s * 1e6));
    ::kill(parent, SIGCONT);
    ::_exit(0);
  }
  stop_myself(1);
  std::fprintf(stderr, "rank 1 runs again\n");
  std::fflush(stderr);
}

int body(dist::ProcessGroup& world, const std::string& how, double timeout_s, double wake_s) {
  world.set_timeout(timeout_s);
  world.set_current_step(3);
  if (how == "stop_ring") world.set_algorithm(dist::Algorithm::ring);
  Tensor t = Tensor::ones({kElements});
  world.all_reduce(t);  // everyone is up
  const int last = world.size() - 1;
  if (how == "stop_split" || how == "stop_exit") {
    if (world.rank() == last && how == "stop_split") stop_myself(last);
    auto pairs = world.split(world.rank() % 2, world.rank());
    Tensor one = Tensor::ones({4});
    pairs->all_reduce(one);
    if (world.rank() == 0) std::printf("pair sum %g\n", static_cast<double>(one.to_vector()[0]));
    if (world.rank() == last && how == "stop_exit") stop_myself(last);
    return 0;  // the others go on to dist::finalize
  }
  if (how == "stall") {
    if (world.rank() == 1) stall_rank_1(wake_s);
  } else if (world.rank() == last && how != "ok") {
    std::fprintf(stderr, "rank %d stops on purpose\n", last);
    std::fflush(stderr);
    std::raise(how == "kill" ? SIGKILL : SIGSTOP);
  }
  if (how == "recv") {
    Tensor r = Tensor::zeros({10});
    if (world.rank() == 0) world.recv(r, last);
    if (world.rank() == last) world.send(r, 0);
    // The ranks not in the exchange wait too (with a longer limit, so rank 0's recv is the one that
    // times out), instead of sitting in MPI_Finalize while rank 0 aborts: Open MPI's abort can hang
    // on ranks already inside MPI_Finalize next to a stopped one.
    if (world.rank() != 0) world.set_timeout(3 * timeout_s);
    world.barrier();
  } else if (how == "barrier") {
    world.barrier();
  } else {
    world.all_reduce(t);
  }
  if (world.rank() == 0) std::printf("sum %g\n", static_cast<double>(t.to_vector()[0]));  // N, then N * N
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string how = argc > 1 ? argv[1] : "stop";
  const double timeout_s = argc > 2 ? std::stod(argv[2]) : 5.0;
  const double wake_s = how == "stall" && argc > 3 ? std::stod(argv[3]) : 0.0;
  if (how == "stop_init") {  // before MPI exists: the launcher's numbering says who is last
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (rank && size && std::atoi(rank) == std::atoi(size) - 1) stop_myself(std::atoi(rank));
  }
  int last = -1;
  const int code = dist::run_main(&argc, &argv, [&](dist::ProcessGroup& world) {
    last = world.rank() == world.size() - 1 ? world.rank() : -1;
    return body(world, how == "stop_late" ? "ok" : how, timeout_s, wake_s);
  });
  if (how == "stop_late" && last >= 0) stop_myself(last);  // MPI is finalized: only the exit watchers can see it
  return code;
}
