#pragma once
/// \file process_group.h
/// Ranks and collectives (docs/design.md §5). A ProcessGroup is a set of ranks that communicate; the world
/// group holds every process started by `mpirun`, sub-groups (for DP × PP grids) are carved from it.
///
/// Every collective records what it moved in the group's CommStats with the *ring algorithm's*
/// volume per rank: reduce-scatter and all-gather send (N−1)/N of the buffer, all-reduce twice that.
/// Those are the numbers of the ZeRO paper, so a step's totals can be checked against it.
///
/// Exactly (N = group size, r = this rank, c(i) = chunk_size(numel, N, i), chunk i belongs to rank i),
/// the elements recorded are the elements this rank *sends* in the ring schedule of dist/ring.h — the
/// same numbers whichever Algorithm ran, so ring and MPI record identically:
///   reduce_scatter  numel − c(r)                      (it sends every chunk but its own)
///   all_gather      numel − c((r + 1) mod N)          (every chunk but the one its right neighbour owns)
///   all_reduce      reduce_scatter + all_gather       (2·(N−1)/N·numel when N divides numel)
///   broadcast       numel, except 0 on the last rank of the chain root → root+1 → … → root−1
///                   (a pipelined ring broadcast: N−1 sends of numel in all)
///   send            numel;   recv 0 (recorded, with 0 elements: the stats count what a rank sends)
///   barrier         not recorded.
/// Every form counts the same: reduce_scatter / _async / _into / _into_async all record one
/// "reduce_scatter", all_gather's forms one "all_gather", send and isend one "send", recv and irecv
/// one "recv"; an asynchronous operation records when it starts.
/// bytes = elements × dtype_size(t.dtype()): a bf16 all-reduce records 2 bytes per element.
/// The *_volume functions below compute these numbers.
///
/// Two implementations of all_reduce / reduce_scatter / all_gather, chosen per group (`set_algorithm`):
/// - Algorithm::mpi  — the MPI library's own MPI_Iallreduce / MPI_Ireduce_scatter / MPI_Iallgatherv
///   (every collective starts the non-blocking call; the blocking forms wait on it);
/// - Algorithm::ring — the hand-written ring over MPI_Isend / MPI_Irecv in dist/ring.h (the lesson;
///   i32 all-gathers still go through MPI_Iallgatherv, a max all-reduce through MPI_Iallreduce).
///   broadcast, send/recv and barrier are MPI's always.
/// Every wait has a deadline (set_timeout, default 300 s): a rank that waits longer — for a rank that
/// stopped, deadlocked or was lost — prints what it waited for and ends the job (abort_job). Waiting
/// ranks sleep between tests instead of spinning; Work::test() never sleeps.
/// The asynchronous forms overlap only under Algorithm::mpi (MPI_Iallreduce, MPI_Ireduce_scatter,
/// MPI_Iallgatherv); under Algorithm::ring the ring runs eagerly inside the call and the returned
/// Work is already finished — the teaching ring has no overlap.
///
/// \code
///   auto& world = minitorch::dist::init(&argc, &argv);   // MPI_Init once; the world group
///   Tensor g = Tensor::ones({10});
///   world.all_reduce(g, dist::ReduceOp::avg);           // in place: the mean over ranks
///   auto work = world.all_reduce_async(g);              // starts it; backward keeps running
///   work->wait();
///   std::int64_t sent = world.stats().bytes;             // ring-volume bytes this rank sent
///   world.all_gather_into(full, shard);                  // into a buffer the caller owns (ZeRO-3)
/// \endcode
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch::dist {

/// sum and avg (sum, then ÷N) for every reduction; max (the element-wise largest) for all_reduce only: the
/// vocabulary-parallel cross-entropy's row maxima (tp/). The teaching ring sums only, so a max runs as
/// MPI's MPI_MAX under Algorithm::ring too (the bytes it records are an all-reduce's either way).
enum class ReduceOp { sum, avg, max };
enum class Algorithm { mpi, ring };
/// "mpi" / "ring"; parse_algorithm throws std::invalid_argument naming the valid ones.
const char* algorithm_name(Algorithm a);
Algorithm parse_algorithm(const std::string& name);

/// What one collective moved, per rank, with the ring algorithm's volume.
struct CommRecord {
  std::string op;          // "all_reduce", "reduce_scatter", "all_gather", "broadcast", "send", "recv"
  std::int64_t elements;   // elements this rank sends (ring volume)
  std::int64_t bytes;      // elements × element size
};

/// Running totals for a group on this rank.
struct CommStats {
  std::int64_t elements = 0;
  std::int64_t bytes = 0;
  std::int64_t calls = 0;
  std::vector<CommRecord> log;  // every collective, in order (cleared by reset)
  void reset() { *this = CommStats{}; }
};

/// A started non-blocking collective. wait() finishes it (and for avg, divides by the group size).
/// Destroying an unfinished Work waits for it (its buffer must outlive the transfer).
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  /// True once finished (does not block).
  virtual bool test() = 0;
};

/// A tensor a started collective is filling: read `tensor` only after `work` has finished.
/// Returned by the allocating async forms (reduce_scatter_async, all_gather_async).
struct AsyncTensor {
  Tensor tensor;
  std::unique_ptr<Work> work;
  /// Waits for the collective and returns the filled tensor.
  Tensor wait() {
    work->wait();
    return tensor;
  }
};

/// Elements of chunk `r` when `numel` elements are split over `world` ranks as evenly as possible:
/// the first numel % world ranks get one more. Reduce-scatter and all-gather use this split.
std::int64_t chunk_size(std::int64_t numel, int world, int r);
/// First element of chunk `r`.
std::int64_t chunk_offset(std::int64_t numel, int world, int r);

/// Elements rank `rank` of `world` sends in each ring collective (the formulas at the top of this file).
std::int64_t reduce_scatter_volume(std::int64_t numel, int world, int rank);
std::int64_t all_gather_volume(std::int64_t numel, int world, int rank);
std::int64_t all_reduce_volume(std::int64_t numel, int world, int rank);
std::int64_t broadcast_volume(std::int64_t numel, int world, int rank, int root);

/// How long a rank waits in one operation before it ends the job, unless set_timeout says otherwise.
inline constexpr double kDefaultTimeoutSeconds = 300;

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Where this group's tensors live: the CPU (MPI), or the rank's GPU (NCCL, dist/nccl_group.h).
  virtual Device device() const { return Device::cpu(); }

  // Tensors: contiguous CPU tensors (any shape; numel is what counts). The reductions take f32 or bf16
  // (bf16 is summed in f32 and rounded once at the end); all_gather, broadcast, send/recv take any
  // dtype. Anything else — a view that is not contiguous, a CUDA tensor, an i32 reduction, a chunk or
  // output of the wrong size or dtype, a rank out of range — throws one std::invalid_argument naming
  // the collective, before any communication (so every rank throws alike).
  // Every rank of the group must call the same collectives in the same order.

  /// In place: every rank ends with the sum (or mean) of all ranks' `t`. t: contiguous f32 (any size).
  virtual void all_reduce(Tensor& t, ReduceOp op = ReduceOp::sum) = 0;
  /// Starts an all-reduce of `t` in place and returns at once (MPI_Iallreduce; call test() now and
  /// then to let MPI progress it). With Algorithm::ring the ring runs eagerly, inside this call, and
  /// the returned Work is already finished: the teaching ring has no overlap.
  virtual std::unique_ptr<Work> all_reduce_async(Tensor& t, ReduceOp op = ReduceOp::sum) = 0;

  // ---- reduce-scatter and all-gather: the ZeRO collectives, in four forms each ----
  //   x(...)              blocking, allocates the result
  //   x_async(...)        starts it, allocates the result (AsyncTensor)
  //   x_into(out, ...)    blocking, writes into a buffer the caller owns
  //   x_into_async(...)   starts it, writes into the caller's buffer (ZeRO-3's prefetch)
  // All four check their arguments and call one backend primitive (start_reduce_scatter /
  // start_all_gather); the blocking forms are that followed by wait(), so sync and async give the same
  // bits. While an async form is in flight its input and output must not be touched (the Work holds
  // references, so they stay alive); call test() now and then to let MPI progress it.
  // Chunks follow chunk_size / chunk_offset: the first numel % N ranks get one element more.

  /// input: (numel) f32 or bf16 on every rank; returns this rank's chunk (chunk_size(numel, N, rank)
  /// elements, input's dtype) of the reduction. Sizes not divisible by N are fine.
  Tensor reduce_scatter(const Tensor& input, ReduceOp op = ReduceOp::sum);
  /// Starts reduce_scatter; the chunk is in the result's `tensor` once its `work` has finished.
  AsyncTensor reduce_scatter_async(const Tensor& input, ReduceOp op = ReduceOp::sum);
  /// input: (numel) f32 or bf16; output_shard: chunk_size(numel, N, rank) elements of input's dtype,
  /// written in place (its data pointer does not change). output_shard may be part of input (e.g. its
  /// own chunk): the input is then copied to a staging buffer first.
  void reduce_scatter_into(Tensor& output_shard, const Tensor& input, ReduceOp op = ReduceOp::sum);
  /// Starts reduce_scatter_into.
  std::unique_ptr<Work> reduce_scatter_into_async(Tensor& output_shard, const Tensor& input,
                                                  ReduceOp op = ReduceOp::sum);

  /// chunk: this rank's chunk_size(numel, N, rank) elements (any dtype); returns the (numel)
  /// concatenation of every rank's chunk.
  Tensor all_gather(const Tensor& chunk, std::int64_t numel);
  /// Starts all_gather; the whole is in the result's `tensor` once its `work` has finished.
  AsyncTensor all_gather_async(const Tensor& chunk, std::int64_t numel);
  /// output: (numel) elements of any dtype, written in place; shard: this rank's
  /// chunk_size(numel, N, rank) elements, same dtype. shard may be output's own chunk
  /// (output.narrow(0, chunk_offset(numel, N, rank), chunk_size(...)) of a 1-D output): the in-place
  /// gather ZeRO-3 runs on its flat parameter buffer, with no copy; any other shard is first copied to
  /// that chunk of the output (every rank gathers in place).
  void all_gather_into(Tensor& output, const Tensor& shard);
  /// Starts all_gather_into.
  std::unique_ptr<Work> all_gather_into_async(Tensor& output, const Tensor& shard);

  /// In place: every rank gets root's `t` (MPI_Bcast for both algorithms).
  virtual void broadcast(Tensor& t, int root) = 0;

  // ---- point to point: t contiguous CPU, any dtype; tag in [0, 32767]; messages from one rank to
  // another with the same tag arrive in the order they were sent (whichever of send / isend sent them).

  /// Starts sending `t` to `dst` (MPI_Isend) and returns at once. `t` is sent from where it is, so
  /// it must not change until the Work has finished (the Work keeps it alive).
  virtual std::unique_ptr<Work> isend(const Tensor& t, int dst, int tag = 0) = 0;
  /// Starts receiving `t.numel()` elements from `src` into `t`. wait() throws std::runtime_error when
  /// the message had fewer elements.
  virtual std::unique_ptr<Work> irecv(Tensor& t, int src, int tag = 0) = 0;
  /// Buffered send — MPI_Bsend's semantics without a user-attached buffer: copies `t` into a staging
  /// buffer (MemTag::comm), starts sending that and returns without waiting for the receiver. `t` can
  /// be reused at once, and a pairwise exchange or a ring where every rank sends before it receives
  /// cannot deadlock. The group keeps the staging buffer and request: any later call on the group frees
  /// the finished ones, destroying the group and finalize() wait for the rest (so every send still
  /// needs its matching recv somewhere).
  virtual void send(const Tensor& t, int dst, int tag = 0) = 0;
  /// Blocking receive of `t.numel()` elements into `t`; throws std::runtime_error when the message had
  /// fewer.
  virtual void recv(Tensor& t, int src, int tag = 0) = 0;
  /// Waits until every rank of the group has called it. Buffered sends may still be in flight.
  virtual void barrier() = 0;
  /// A group of the ranks whose `color` matches this rank's, ordered by `key` (MPI_Comm_split).
  /// Collective over this group. A negative color joins no group and returns nullptr. The new group
  /// starts with this group's algorithm and empty stats.
  virtual std::shared_ptr<ProcessGroup> split(int color, int key) = 0;

  /// Seconds a rank waits in one operation (a collective, a receive, a send to finish) before it gives
  /// up: it prints "rank R: error: <operation> timed out after S s at step N: <who did not arrive>"
  /// and ends the job (abort_job). Must be > 0 and finite (else std::invalid_argument); 1e9 or more
  /// (dist/deadline.h) is no limit. Default kDefaultTimeoutSeconds (config `comm.timeout_s`,
  /// `--comm-timeout`). split() passes it on.
  void set_timeout(double seconds);
  double timeout() const { return timeout_s_; }
  /// The training step in progress (counted from 1, as the log does), named by timeout messages;
  /// -1 (the default) = not known. The engine sets it as each step begins; split() passes it on.
  void set_current_step(std::int64_t step) { current_step_ = step; }
  std::int64_t current_step() const { return current_step_; }

  /// What this group is in its grid ("data", "pipeline", "tensor"; "" for the world), carried by every
  /// collective's event (events::Event::group): the report and the trace tell tensor-parallel traffic apart.
  void set_label(std::string label) { label_ = std::move(label); }
  const std::string& label() const { return label_; }

  void set_algorithm(Algorithm a) { algorithm_ = a; }
  Algorithm algorithm() const { return algorithm_; }
  CommStats& stats() { return stats_; }
  const CommStats& stats() const { return stats_; }
  /// While off, collectives move data but add nothing to stats() (e.g. averaging a loss for the log,
  /// which is not part of a step's traffic). On by default; see also NoRecordScope.
  void set_recording(bool on) { recording_ = on; }
  bool recording() const { return recording_; }

 protected:
  /// Adds one collective to the stats (called by implementations); nothing while recording() is off.
  void record(const std::string& op, std::int64_t elements, DType dtype);
  /// The backend's one reduce-scatter: arguments already checked by the public forms (input (numel)
  /// f32/bf16; output chunk_size(numel, N, rank) elements of the same dtype; both contiguous CPU).
  /// Returns the started collective (finished already where the backend ran it eagerly).
  virtual std::unique_ptr<Work> start_reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op) = 0;
  /// The backend's one all-gather: output (numel) and shard chunk_size(numel, N, rank) elements, same
  /// dtype, checked by the public forms; shard may be output's own chunk.
  virtual std::unique_ptr<Work> start_all_gather(Tensor& output, const Tensor& shard) = 0;
  int rank_ = 0, size_ = 1;
  Algorithm algorithm_ = Algorithm::mpi;
  bool recording_ = true;
  CommStats stats_;
  double timeout_s_ = kDefaultTimeoutSeconds;
  std::string label_;
  std::int64_t current_step_ = -1;
};

/// Turns a group's recording off while it lives; restores the previous setting.
class NoRecordScope {
 public:
  explicit NoRecordScope(ProcessGroup& g) : g_(g), previous_(g.recording()) { g.set_recording(false); }
  ~NoRecordScope() { g_.set_recording(previous_); }
  NoRecordScope(const NoRecordScope&) = delete;
  NoRecordScope& operator=(const NoRecordScope&) = delete;

 private:
  ProcessGroup& g_;
  bool previous_;
};

/// Every rank's `mine`, in rank order, on every rank: lengths all-gathered, then the texts padded to
/// the longest. Bookkeeping, not step traffic: not recorded. Collective (every rank calls it).
std::vector<std::string> all_gather_strings(ProcessGroup& group, const std::string& mine);

/// Initialises MPI once (thread level: funneled) and returns the world group. Safe to call again.
/// Installs a terminate handler so an uncaught exception on one rank prints "rank R: error: ..."
/// and calls MPI_Abort: the whole job exits non-zero instead of hanging.
ProcessGroup& init(int* argc, char*** argv);
/// The world group; init() must have run.
ProcessGroup& world();
/// True once init() has run.
bool initialized();
/// Finalises MPI (also done at exit). MPI_Finalize waits for every rank: a rank that leaves early
/// because of an error must call abort_job (or let an exception escape), not return from main.
void finalize();
/// Prints "rank R: error: <what>" to stderr and aborts the whole job with exit code `code`
/// (MPI_Abort on the world: every rank is killed, mpirun exits non-zero). With no one else to take
/// down — before init(), or in a 1-rank world — it prints "error: <what>" and exits with `code`.
/// init() installs a std::terminate handler that calls this with the escaping exception's what().
/// `linger_s`: seconds between the message and MPI_Abort, so that other ranks about to say why the job
/// fails (those that gave up on the same collective, dist/roll_call.h) are not killed before they do.
[[noreturn]] void abort_job(const std::string& what, int code = 1, double linger_s = 0);

/// The main() of a multi-rank program: init(argc, argv), then body(world). An exception escaping
/// body aborts the job through abort_job(e.what()); a non-zero return aborts it with that exit code
/// (its message is body's to print; in a 1-rank world it just returns the code); zero finalises
/// MPI and returns 0.
///   int main(int argc, char** argv) {
///     return dist::run_main(&argc, &argv, [&](dist::ProcessGroup& world) { ...; return 0; });
///   }
int run_main(int* argc, char*** argv, const std::function<int(ProcessGroup&)>& body);

}  // namespace minitorch::dist
