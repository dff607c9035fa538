#include "dist/deadline.h"

#include <cmath>

namespace minitorch::dist {

bool no_limit(double seconds) { return seconds >= kNoLimitSeconds; }  // NaN: false

Clock::time_point deadline_after(double seconds, Clock::time_point from) {
  if (no_limit(seconds)) return Clock::time_point::max();
  if (!(seconds > 0)) return from;
  const auto span = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  // Below 1e9 s the span fits; only a `from` within 32 years of the clock's end could still overflow.
  if (from > Clock::time_point::max() - span) return Clock::time_point::max();
  return from + span;
}

}  // namespace minitorch::dist
