// find_tick_grid: the tick grid of a timer wheel, by bisection on the instants its timers
// resume at (tick_grid.hpp).
#include "tick_grid.hpp"

#include <chrono>
#include <optional>

namespace spool_bench {

namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

// How late, on the runtime `rt` (idle), a timer for `deadline` resumes its task.
nanoseconds fire_delay(spool::Runtime& rt, spool::Instant deadline) {
  return rt.block_on([](spool::Instant d) -> spool::Task<nanoseconds> {
    co_await spool::sleep_until(d);
    co_return spool::time::now() - d;
  }(deadline));
}

// The instant in phase with `c` (c + k x r) that is at least r / 2 ahead of now.
spool::Instant ahead(spool::Instant c, nanoseconds r) {
  TickGrid g{c, r, true};
  return g.at_or_after(spool::time::now() + r / 2);
}

}  // namespace

// By bisection. A
// timer fires at the first tick boundary at or after its deadline (docs/time.md), so within a
// bracket of width w < r / 2 around a boundary, a probe whose deadline is before the boundary
// resumes within w / 2 + its wake-up, and one whose deadline is after it only after r - w / 2.
// A delay between the two (a wake-up slower than r / 2 - w / 2) is probed again. The grid is
// checked by probes on both sides of it; nullopt when that fails three times, or when r is too
// fine for the method.
std::optional<TickGrid> find_tick_grid(spool::Runtime& rt, nanoseconds r) {
  if (r < microseconds(200)) return std::nullopt;
  for (int attempt = 0; attempt < 3; ++attempt) {
    // [lo, hi] holds a boundary: the probe's timer came due at one, at or after its deadline
    // lo, before it resumed at hi. One wider than r / 2 is made again half a tick on.
    spool::Instant lo = spool::time::now() + r;
    nanoseconds delay = fire_delay(rt, lo);
    if (delay >= r / 2) {
      lo = ahead(lo + r / 2, r);
      delay = fire_delay(rt, lo);
    }
    if (delay >= r / 2) continue;
    spool::Instant hi = lo + delay;
    for (int probes = 0; probes < 60 && hi - lo > nanoseconds(100); ++probes) {
      const spool::Instant mid = lo + (hi - lo) / 2;
      delay = fire_delay(rt, ahead(mid, r));
      if (delay < r / 2) {
        lo = mid;  // it fired in its tick: the boundary is at or after mid
      } else if (delay >= r - (hi - lo) / 2) {
        hi = mid;  // it fired a tick later: mid is past the boundary
      }
    }
    // Deadlines at lo fire in their tick, deadlines 1 us after hi a whole tick later.
    bool ok = hi - lo <= nanoseconds(100);
    for (int i = 0; ok && i < 2; ++i) {
      ok = fire_delay(rt, ahead(lo, r)) < r / 2 &&
           fire_delay(rt, ahead(hi + microseconds(1), r)) >= r - microseconds(2);
    }
    if (ok) return TickGrid{lo, r, true};
  }
  return std::nullopt;
}

}  // namespace spool_bench
