#pragma once
/// \file deadline.h
/// The one place a timeout in seconds becomes a moment on the clock. `steady_clock::now() + seconds`
/// overflows its 64-bit nanosecond count past about 292 years, and the wrapped moment lies in the past:
/// `--comm-timeout 1e10` then timed out MPI_Init at once. Every deadline of dist/ (comm_wait.h's waits,
/// phase_deadline.h's watchdog, exit_watch.h's watcher) is computed here, and saturates instead: a timeout
/// of kNoLimitSeconds or more is no limit at all.
///
/// \code
///   const auto until = deadline_after(timeout_s);   // Clock::time_point::max() when there is no limit
///   while (!done()) { if (Clock::now() >= until) give_up(); ... }
/// \endcode
#include <chrono>

namespace minitorch::dist {

using Clock = std::chrono::steady_clock;

/// A timeout of this many seconds (about 32 years) or more means "no limit": far below the clock's
/// range, so that every shorter timeout fits after any `from` a running machine can have.
constexpr double kNoLimitSeconds = 1e9;

/// Whether `seconds` means no limit (>= kNoLimitSeconds, or +inf).
bool no_limit(double seconds);

/// The moment `seconds` after `from`: Clock::time_point::max() for no_limit(seconds), `from` itself for a
/// value <= 0 or NaN (already due), else from + seconds rounded to the clock's tick.
Clock::time_point deadline_after(double seconds, Clock::time_point from = Clock::now());

}  // namespace minitorch::dist
