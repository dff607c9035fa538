#pragma once
/// \file roll_call.h
/// Who did not arrive (internal to dist/). When a collective times out, MPI cannot say whose part is
/// missing, and a rank that was itself stopped cannot tell that from the others being late. So each
/// group keeps a roll-call channel beside its ring (its own tag on the ring's communicator):
///
/// - A rank that gives up waiting tells every other rank of the group so (`gave_up`), then gathers
///   their answers for a short grace period (kRollCallSeconds). That message is final: the job fails.
/// - A rank that waits polls the channel between its tests. Finding a `gave_up` it answers `here`:
///   the group's collectives it has begun, and how long ago it began its current one.
/// - A rank that finds a `gave_up` already waiting when it begins a collective, or when it runs again
///   after being stopped in a wait, arrived after the job had failed: it answers `late` and reports that
///   (stopped or too slow) instead of blaming the others, then lets the ranks that gave up end the job.
///   A `here` that shows it began the collective after the other gave up gets it the same `verdict`.
///
/// The rank that gave up names the ranks that never answered, or began the collective only after it
/// gave up, in the world's numbering: "rank 1 did not arrive". Nothing is sent while every wait
/// completes: the channel costs one MPI_Iprobe per collective begun and per test in a long wait.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "dist/deadline.h"

namespace minitorch::dist::detail {

/// How long a rank that gave up gathers the others' answers before it ends the job (capped by the
/// timeout itself); answers from healthy waiting ranks arrive within milliseconds.
constexpr double kRollCallSeconds = 2.0;
/// How long a rank that reported lets the other ranks that gave up too report before it ends the job:
/// their roll calls end within milliseconds of its own.
constexpr double kLingerSeconds = 0.5;

/// One message on the channel.
struct Notice {
  enum Kind { gave_up = 1, here = 2, late = 3, verdict = 4 };  // verdict: "you came late"
  int from = -1;          ///< group rank of the sender
  int kind = 0;           ///< a Kind
  std::int64_t seq = -1;  ///< gave_up: the collective given up on (-1: a send or receive); else collectives begun
  double seconds = 0;     ///< gave_up: how long it waited; here: seconds since it began (or woke in) its collective
};

/// What a roll call found: the world ranks that did not answer (or are still in an earlier operation),
/// and those that began the collective only after this rank gave up.
struct Absent {
  std::vector<int> missing, late;
  bool asked = false;  ///< a roll call ran (false: a send or receive, or no channel)
  int also_gave_up = 0;  ///< other ranks that gave up on it too (they report at about the same moment)
};

/// "rank 1 did not arrive", "ranks 1 and 3 did not arrive; rank 2 arrived only after this rank gave up
/// (...)"; empty when every rank answered that it is in the operation.
std::string describe(const Absent& a);

class RollCall {
 public:
  /// `comm`: the group's ring communicator; `world_ranks`: [group rank] = world rank.
  RollCall(MPI_Comm comm, int rank, std::vector<int> world_ranks);
  /// The group's communicators are being freed: the channel goes quiet.
  void close() { comm_ = MPI_COMM_NULL; }

  /// A collective of the group begins (`what` and `step` name it): counts it, and if another rank has
  /// already given up, ends this rank as late (never returns then).
  void begin_collective(const std::string& what, std::int64_t step);
  /// Collectives begun so far: the number of the one begun last, counted from 1.
  std::int64_t begun() const { return begun_; }
  /// When the collective begun last began.
  Clock::time_point began_at() const { return began_at_; }

  /// Between the tests of a wait whose operation began (or whose rank last woke from a stop) at `since`:
  /// reads the channel and answers each gave_up. `fresh`: the rank just woke from a stop, so a gave_up
  /// found now makes it late (ends it, never returns).
  void poll(Clock::time_point since, bool fresh, const std::string& what, std::int64_t step);

  /// This rank gave up after `waited_s` in collective `seq`: tells the others, and for a collective gathers
  /// their answers for up to `grace_s`.
  Absent give_up(std::int64_t seq, double waited_s, double grace_s);

 private:
  void send(int to, int kind, std::int64_t seq, double seconds);
  /// Receives every message waiting on the channel into seen_; returns the gave_up ones among them.
  std::vector<Notice> receive();
  /// Reports that the job had already failed (naming every rank seen giving up), answers them `late`,
  /// and leaves the ending to them.
  [[noreturn]] void end_late(const std::string& what, std::int64_t step);

  MPI_Comm comm_;
  int rank_;
  std::vector<int> world_ranks_;
  std::int64_t begun_ = 0;
  Clock::time_point began_at_ = Clock::now();
  std::vector<Notice> seen_;              // every message received, oldest first
  std::deque<std::array<double, 3>> out_;  // send buffers: alive as long as the group (never waited)
};

}  // namespace minitorch::dist::detail
