// The backend's one wait loop (comm_wait.h): test, back off, give up at the deadline.
#include "dist/comm_wait.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "dist/deadline.h"
#include "dist/process_group.h"

namespace minitorch::dist::detail {

namespace {
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);  // every thread of the rank, MPI's included
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool all_done(MPI_Request* requests, int n, MPI_Status* statuses) {
  int flag = 0;
  MPI_Testall(n, requests, &flag, statuses);  // each test also lets MPI move the transfers along
  return flag != 0;
}
}  // namespace

WaitResult wait_for(MPI_Request* requests, int n, MPI_Status* statuses, double timeout_s,
                    const BetweenTests& between) {
  using Seconds = std::chrono::duration<double>;
  const auto t0 = Clock::now();
  const double cpu0 = cpu_seconds();
  auto finish = [&](bool done) { return WaitResult{done, Seconds(Clock::now() - t0).count(), cpu_seconds() - cpu0}; };
  if (all_done(requests, n, statuses)) return finish(true);
  constexpr double kFirstSleep = 50e-6, kMaxSleep = 10e-3;
  double sleep = kFirstSleep;
  auto start = t0, last = t0;  // start: since when the deadline counts
  auto until = deadline_after(timeout_s, start);
  bool woke = false;  // not yet told to `between`
  for (;;) {
    const auto now = Clock::now();
    if (Seconds(now - last).count() > kStoppedSeconds) {  // this rank was stopped: count from now
      woke = true;
      until = deadline_after(timeout_s, start = now);
    }
    last = now;
    const double waited = Seconds(now - start).count();
    if (waited >= kSpinSeconds && between) {
      between(woke);
      woke = false;
    }
    if (now >= until) return finish(all_done(requests, n, statuses));  // what came meanwhile counts
    if (waited < kSpinSeconds) {
      std::this_thread::yield();  // what MPI_Wait does when ranks share cores
    } else {
      // Never sleep past the deadline, nor much longer than the wait has lasted so far.
      const double nap = std::min({sleep, std::max(kFirstSleep, waited / 4), Seconds(until - now).count()});
      std::this_thread::sleep_for(Seconds(nap));
      sleep = std::min(2 * sleep, kMaxSleep);
    }
    if (all_done(requests, n, statuses)) return finish(true);
  }
}

std::string timeout_message(const WaitContext& ctx, const WaitResult& r, const Absent& absent) {
  char buf[160];
  std::string m = ctx.what;
  std::snprintf(buf, sizeof buf, " timed out after %g s", ctx.timeout_s);
  m += buf;
  if (ctx.step >= 0) m += " at step " + std::to_string(ctx.step);
  const std::string named = describe(absent);
  if (ctx.peer >= 0)
    m += ": rank " + std::to_string(ctx.peer) + " (the peer) did not arrive";
  else if (!named.empty())
    m += ": " + named;
  else if (absent.asked)
    m += ": every rank of the group (" + std::to_string(ctx.group_size) + " ranks) answered that it is in it, yet it "
         "did not complete";
  else
    m += ": one or more ranks of the group (" + std::to_string(ctx.group_size) + " ranks) did not arrive";
  std::snprintf(buf, sizeof buf, " (this rank waited %.1f s using %.3f s of CPU; the limit is comm.timeout_s or --comm-timeout)",
                r.wall_s, r.cpu_s);
  return m + buf;
}

void wait_all(MPI_Request* requests, int n, MPI_Status* statuses, const WaitContext& ctx) {
  BetweenTests answer;
  if (ctx.roll) {
    answer = [&ctx, since = ctx.began](bool woke) mutable {
      if (woke) since = Clock::now();  // stopped inside this wait: it arrives again now
      ctx.roll->poll(since, woke, ctx.what, ctx.step);
    };
  }
  const WaitResult r = wait_for(requests, n, statuses, ctx.timeout_s, answer);
  if (r.done) return;
  Absent absent;
  if (ctx.roll) absent = ctx.roll->give_up(ctx.seq, r.wall_s, std::min(kRollCallSeconds, ctx.timeout_s));
  abort_job(timeout_message(ctx, r, absent), 1, absent.also_gave_up > 0 ? kLingerSeconds : 0);
}

}  // namespace minitorch::dist::detail
