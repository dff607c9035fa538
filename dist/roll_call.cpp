// The roll call of a group (roll_call.h): who is in the collective a rank gave up on, and who came late.
#include "dist/roll_call.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <thread>

namespace minitorch::dist::detail {

namespace {
constexpr int kRollCallTag = 8;  // on the ring's communicator, beside the ring's tag 7
// An answer's "began S seconds ago" is compared with the time since this rank gave up; both are
// measured on one clock each, so only the message's transit separates them.
constexpr double kSlackSeconds = 0.05;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// "rank 0" / "ranks 0 and 2" / "ranks 0, 2 and 3"
std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream os;
  os << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i)
    os << (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") << ranks[i];
  return os.str();
}
}  // namespace

RollCall::RollCall(MPI_Comm comm, int rank, std::vector<int> world_ranks)
    : comm_(comm), rank_(rank), world_ranks_(std::move(world_ranks)) {}

void RollCall::send(int to, int kind, std::int64_t seq, double seconds) {
  out_.push_back({static_cast<double>(kind), static_cast<double>(seq), seconds});  // stays in place
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Isend(out_.back().data(), 3, MPI_DOUBLE, to, kRollCallTag, comm_, &request);
  MPI_Request_free(&request);  // a small message: the job ends soon after, and nobody waits for it
}

std::vector<Notice> RollCall::receive() {
  std::vector<Notice> fresh;
  for (;;) {
    int flag = 0;
    MPI_Status status{};
    MPI_Iprobe(MPI_ANY_SOURCE, kRollCallTag, comm_, &flag, &status);
    if (!flag) return fresh;
    double m[3] = {0, 0, 0};
    MPI_Recv(m, 3, MPI_DOUBLE, status.MPI_SOURCE, kRollCallTag, comm_, MPI_STATUS_IGNORE);
    fresh.push_back(Notice{status.MPI_SOURCE, static_cast<int>(m[0]), static_cast<std::int64_t>(m[1]), m[2]});
    seen_.push_back(fresh.back());
  }
}

void RollCall::begin_collective(const std::string& what, std::int64_t step) {
  ++begun_;
  began_at_ = Clock::now();
  poll(began_at_, /*fresh=*/true, what, step);
}

void RollCall::poll(Clock::time_point since, bool fresh, const std::string& what, std::int64_t step) {
  if (comm_ == MPI_COMM_NULL) return;
  std::vector<Notice> gave_up;
  bool told_late = false;
  for (const Notice& n : receive()) {
    if (n.kind == Notice::gave_up) gave_up.push_back(n);
    told_late = told_late || n.kind == Notice::verdict;
  }
  if (told_late || (fresh && !gave_up.empty())) end_late(what, step);
  // Waiting here when they gave up: say where this rank is, and go on waiting (they end the job).
  for (const Notice& n : gave_up) send(n.from, Notice::here, begun_, seconds_since(since));
}

void RollCall::end_late(const std::string& what, std::int64_t step) {
  std::vector<Notice> gave_up;
  for (const Notice& n : seen_)
    if (n.kind == Notice::gave_up) gave_up.push_back(n);
  std::sort(gave_up.begin(), gave_up.end(), [](const Notice& x, const Notice& y) { return x.from < y.from; });
  std::ostringstream os;
  os << "rank " << world_ranks_[static_cast<std::size_t>(rank_)] << ": error: the job had already failed: ";
  for (std::size_t i = 0; i < gave_up.size(); ++i) {
    char waited[64];
    std::snprintf(waited, sizeof waited, " after %.1f s", gave_up[i].seconds);
    os << (i ? ", " : "") << "rank " << world_ranks_[static_cast<std::size_t>(gave_up[i].from)]
       << (i ? "" : " gave up waiting") << waited;
  }
  os << ", and this rank came late: it was stopped, or too slow (it learned this in " << what
     << (step >= 0 ? " at step " + std::to_string(step) : std::string())
     << "). The ranks that gave up name who did not arrive and end the job\n";
  const std::string line = os.str();
  std::fflush(stdout);
  std::fwrite(line.data(), 1, line.size(), stderr);  // one write: the ranks' lines interleave
  std::fflush(stderr);
  for (const Notice& n : gave_up) send(n.from, Notice::late, begun_, 0);  // after the line: they end the job
  // They end the job as soon as every rank has answered; should that not come, end it from here.
  std::this_thread::sleep_for(std::chrono::duration<double>(kRollCallSeconds + 3.0));
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

Absent RollCall::give_up(std::int64_t seq, double waited_s, double grace_s) {
  Absent a;
  if (comm_ == MPI_COMM_NULL) return a;
  const int size = static_cast<int>(world_ranks_.size());
  for (int q = 0; q < size; ++q)
    if (q != rank_) send(q, Notice::gave_up, seq, waited_s);
  if (seq < 0) return a;  // a send or receive: its message names the peer
  a.asked = true;
  const Clock::time_point gave = Clock::now();
  // Per rank: 0 no word, 1 in an earlier operation, 2 came late, 3 arrived; the best word counts.
  enum { none = 0, behind = 1, came_late = 2, arrived = 3 };
  std::vector<int> state(static_cast<std::size_t>(size), none);
  std::vector<bool> told(static_cast<std::size_t>(size), false);  // sent a verdict, its `late` not back yet
  state[static_cast<std::size_t>(rank_)] = arrived;
  auto judge = [&](const Notice& n) {
    const auto q = static_cast<std::size_t>(n.from);
    int s = none;
    if (n.kind == Notice::gave_up) {
      s = n.seq >= seq ? arrived : behind;
      ++a.also_gave_up;
    }
    if (n.kind == Notice::late) {
      s = came_late;
      told[q] = false;
    }
    if (n.kind == Notice::here && n.seq != seq) s = n.seq < seq ? behind : arrived;  // arrived: and went on
    if (n.kind == Notice::here && n.seq == seq) {
      // It began the collective `seconds` ago: after this rank gave up, it came late. Tell it, so that it
      // says so itself (it may not know: its first look at the channel can miss what is already there).
      s = n.seconds + kSlackSeconds < seconds_since(gave) ? came_late : arrived;
      if (s == came_late && !told[q]) {
        send(n.from, Notice::verdict, seq, 0);
        told[q] = true;
      }
    }
    state[q] = std::max(state[q], s);
  };
  for (const Notice& n : seen_)
    if (n.kind == Notice::gave_up) judge(n);  // those that gave up before this rank did
  const Clock::time_point until = deadline_after(grace_s, gave);
  auto unsettled = [&] {
    return std::count(state.begin(), state.end(), none) > 0 || std::count(told.begin(), told.end(), true) > 0;
  };
  while (unsettled() && Clock::now() < until) {
    for (const Notice& n : receive()) judge(n);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (int q = 0; q < size; ++q) {
    const int s = state[static_cast<std::size_t>(q)], world = world_ranks_[static_cast<std::size_t>(q)];
    if (s == none || s == behind) a.missing.push_back(world);
    if (s == came_late) a.late.push_back(world);
  }
  return a;
}

std::string describe(const Absent& a) {
  std::string m;
  if (!a.missing.empty())
    m = rank_list(a.missing) + " did not arrive";
  if (!a.late.empty())
    m += (m.empty() ? "" : "; ") + rank_list(a.late) +
         " did not arrive in time (came only after this rank gave up: stopped, or too slow)";
  return m;
}

}  // namespace minitorch::dist::detail
