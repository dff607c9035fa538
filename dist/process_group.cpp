// ProcessGroup's shared parts: the chunk split, the ring-volume formulas, byte accounting, and the
// life of MPI in this process (init once, the world group, failure handling, finalize).
#include "dist/process_group.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>


#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>

#include "dist/exit_watch.h"
#include "dist/mpi_group.h"
#include "dist/phase_deadline.h"

namespace minitorch::dist {

const char* algorithm_name(Algorithm a) { return a == Algorithm::ring ? "ring" : "mpi"; }

Algorithm parse_algorithm(const std::string& name) {
  if (name == "mpi") return Algorithm::mpi;
  if (name == "ring") return Algorithm::ring;
  throw std::invalid_argument("unknown collective algorithm '" + name + "' (expected mpi or ring)");
}

// ---------------- the chunk split ----------------
namespace {
void check_split(std::int64_t numel, int world, int r, const char* fn) {
  if (numel < 0 || world < 1 || r < 0 || r >= world)
    throw std::invalid_argument(std::string(fn) + ": need numel >= 0 and 0 <= r < world, got numel " +
                                std::to_string(numel) + ", world " + std::to_string(world) + ", r " + std::to_string(r));
}
}  // namespace

std::int64_t chunk_size(std::int64_t numel, int world, int r) {
  check_split(numel, world, r, "chunk_size");
  return numel / world + (r < numel % world ? 1 : 0);
}

std::int64_t chunk_offset(std::int64_t numel, int world, int r) {
  check_split(numel, world, r, "chunk_offset");
  // r full chunks of numel / world, plus one extra element for each earlier rank that got one.
  return r * (numel / world) + std::min<std::int64_t>(r, numel % world);
}

// ---------------- what each rank sends in the ring (process_group.h has the table) ----------------
std::int64_t reduce_scatter_volume(std::int64_t numel, int world, int rank) {
  return numel - chunk_size(numel, world, rank);
}
std::int64_t all_gather_volume(std::int64_t numel, int world, int rank) {
  return numel - chunk_size(numel, world, (rank + 1) % world);
}
std::int64_t all_reduce_volume(std::int64_t numel, int world, int rank) {
  return reduce_scatter_volume(numel, world, rank) + all_gather_volume(numel, world, rank);
}
std::int64_t broadcast_volume(std::int64_t numel, int world, int rank, int root) {
  check_split(numel, world, rank, "broadcast_volume");
  check_split(numel, world, root, "broadcast_volume");
  const bool last_in_chain = (rank - root + world) % world == world - 1;
  return last_in_chain ? 0 : numel;
}

void ProcessGroup::set_timeout(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds))
    throw std::invalid_argument("ProcessGroup::set_timeout: need a number of seconds > 0, got " + std::to_string(seconds));
  timeout_s_ = seconds;
}

void ProcessGroup::record(const std::string& op, std::int64_t elements, DType dtype) {
  if (!recording_) return;
  const std::int64_t bytes = elements * static_cast<std::int64_t>(dtype_size(dtype));
  stats_.elements += elements;
  stats_.bytes += bytes;
  stats_.calls += 1;
  stats_.log.push_back(CommRecord{op, elements, bytes});
}

// ---------------- MPI in this process ----------------
namespace {
std::unique_ptr<MpiGroup>& world_slot() {
  static std::unique_ptr<MpiGroup> w;
  return w;
}

bool mpi_live() {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  return inited && !finalized;
}

// An exception nobody caught, on any thread: name it, then take the whole job down. Without this the
// other ranks would wait forever in their next collective for a rank that no longer exists.
[[noreturn]] void on_terminate() {
  std::string what = "std::terminate called without an active exception";
  if (auto ep = std::current_exception()) {
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "unknown exception";
    }
  }
  abort_job(what, 1);
}

void finalize_at_exit() { finalize(); }

// This process's rank as the launcher numbered it, before MPI_Init can say (-1: not launched by mpirun).
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"})
    if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
  return -1;
}
}  // namespace

ProcessGroup& init(int* argc, char*** argv) {
  auto& w = world_slot();
  if (w) return *w;
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized) throw std::logic_error("dist::init: MPI was already finalized in this process");
  // No config is read yet: --comm-timeout on the command line, else the default, bounds the start-up.
  const double limit = comm_timeout_from_args(argc ? *argc : 0, argv ? *argv : nullptr);
  if (!inited) {
    int provided = 0;
    {  // every rank waits in MPI_Init for all the others: a rank that never arrives would hang them
      PhaseDeadline deadline("MPI_Init", limit, launcher_rank(),
                             "a rank of the job did not start, or stopped while starting (each rank waits in "
                             "MPI_Init for all the others; --comm-timeout sets this limit)");
      MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    }
    if (provided < MPI_THREAD_FUNNELED) {
      std::fprintf(stderr, "warning: MPI provides thread level %d < MPI_THREAD_FUNNELED\n", provided);
    }
  }
  w = std::make_unique<MpiGroup>(MPI_COMM_WORLD, /*owned=*/false, limit);
  std::set_terminate(on_terminate);
  std::atexit(finalize_at_exit);
  return *w;
}

ProcessGroup& world() {
  auto& w = world_slot();
  if (!w) throw std::logic_error("dist::world: call dist::init(&argc, &argv) first");
  return *w;
}

bool initialized() { return world_slot() != nullptr; }

void finalize() {
  if (!mpi_live()) return;
  MpiGroup::complete_all_sends();  // MPI_Finalize needs every buffered send complete
  // MPI_Finalize waits for every rank, with no deadline: a rank stopped after its last step would hang
  // the others there. So first a barrier with the comm timeout (a late rank ends the job, named), then
  // MPI_Finalize under a watchdog for a rank that stops between the two.
  const auto& w = world_slot();
  const double limit = w ? w->timeout() : kDefaultTimeoutSeconds;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<PeerProcess> peers;  // this machine's other ranks, for the exit watcher
  if (w && size > 1) {
    peers = peers_on_this_host(w->shutdown_exchange(process_label()), rank);
  }
  {
    PhaseDeadline deadline("MPI_Finalize", limit, rank,
                           "one or more ranks of the job (" + std::to_string(size) + " ranks) did not arrive");
    MPI_Finalize();
  }
  // A rank stopped after the barrier would still keep mpirun waiting: a watcher outlives this rank.
  leave_exit_watcher(peers, limit, rank);
}

void abort_job(const std::string& what, int code, double linger_s) {
  std::fflush(stdout);
  int size = 1, rank = 0;
  const bool live = mpi_live();
  if (live) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  }
  if (live && size > 1) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, what.c_str());
    std::fflush(stderr);
    if (linger_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(linger_s));
    kill_stopped_job_peers(rank);     // a stopped rank on this machine: mpirun's own kill may never land
    MPI_Abort(MPI_COMM_WORLD, code);  // kills every rank; mpirun exits with `code`
  } else {
    // One process: nobody to take down; exit without MPI_Finalize (which could wait on nothing).
    std::fprintf(stderr, "error: %s\n", what.c_str());
    std::fflush(stderr);
  }
  std::_Exit(code);
}

int run_main(int* argc, char*** argv, const std::function<int(ProcessGroup&)>& body) {
  ProcessGroup* w = nullptr;
  int code = 0;
  try {
    w = &init(argc, argv);
    code = body(*w);
  } catch (const std::exception& e) {
    abort_job(e.what(), 1);
  } catch (...) {
    abort_job("unknown exception", 1);
  }
  if (code != 0 && w->size() > 1) {
    // A rank that stops early must not wait in MPI_Finalize for ranks that wait for it.
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  finalize();
  return code;
}

std::vector<std::string> all_gather_strings(ProcessGroup& group, const std::string& mine) {
  if (group.size() == 1) return {mine};
  NoRecordScope not_counted(group);
  const int n = group.size();
  Tensor len = Tensor::from_ints({static_cast<std::int32_t>(mine.size())}, {1});
  const std::vector<std::int32_t> lens = group.all_gather(len, n).to_int_vector();
  std::size_t longest = 0;
  for (std::int32_t l : lens) longest = std::max(longest, static_cast<std::size_t>(l));
  const std::int64_t words = static_cast<std::int64_t>((longest + 3) / 4);  // i32 words
  std::vector<std::int32_t> packed(static_cast<std::size_t>(words), 0);
  std::memcpy(packed.data(), mine.data(), mine.size());
  Tensor all = group.all_gather(Tensor::from_ints(packed, {words}), words * n);
  const char* bytes = reinterpret_cast<const char*>(all.data<std::int32_t>());
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r)
    out.emplace_back(bytes + r * words * 4, static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
  return out;
}

}  // namespace minitorch::dist
