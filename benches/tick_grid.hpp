// The tick grid of a runtime's timer wheel, for benchmarks that time a timer's wake-up. The
// wheel rounds a deadline up to its next tick (Builder::timer_resolution, 1 ms by default;
// docs/time.md), so a deadline placed anywhere waits up to a tick more than its own delay:
// the timer's resolution, not the latency being measured. A deadline on the grid comes due
// at that very instant. P1 (priority.cpp) puts its timer deadlines on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "spool/runtime.hpp"
#include "spool/time.hpp"

namespace spool_bench {

// The instants base + k x resolution (any integer k) of a timer wheel, base at most 100 ns
// before one of its tick boundaries; or no grid (aligned = false).
struct TickGrid {
  spool::Instant base{};
  std::chrono::nanoseconds resolution{1};
  bool aligned = false;

  // The first instant of the grid at or after t; t itself when there is no grid.
  spool::Instant at_or_after(spool::Instant t) const {
    if (!aligned) return t;
    const std::int64_t d = (t - base).count();
    const std::int64_t r = resolution.count();
    std::int64_t k = d / r;  // truncated: the ceiling already when d < 0
    if (k * r < d) ++k;
    return base + std::chrono::nanoseconds(k * r);
  }
};

// Finds the tick grid of the timer wheel of `rt`, whose resolution is `r`, with timers armed
// from the calling thread (Runtime::block_on; not a worker). Call it while the runtime is
// idle: it takes some 20 timers, about 30 ms. nullopt when the grid cannot be found (a
// wake-up slower than r / 4 again and again, or r finer than 200 us).
std::optional<TickGrid> find_tick_grid(spool::Runtime& rt, std::chrono::nanoseconds r);

}  // namespace spool_bench
