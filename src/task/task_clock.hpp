// The clock of task times (task_times.hpp). Reading it is most of what measuring task times
// costs (a read at each poll's start and end and at each wake), so where the CPU's time-stamp
// counter runs at a constant rate (x86-64's invariant TSC) and the kernel keeps time with it
// (task_clock.cpp) it reads that: about 10 ns a read on the reference machine, against 24 for
// clock_gettime. Elsewhere it reads CLOCK_MONOTONIC. Ticks become nanoseconds by a rate
// measured against CLOCK_MONOTONIC once per process (to_ns; good to about 1e-4, and NTP's
// slewing of the monotonic clock, up to 5e-4, is not followed: figures for display).
#pragma once

#include <time.h>

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace spool::detail {

class TaskClock {
 public:
  // Chooses the source and measures its rate, once per process (about 1 ms, the first time):
  // called by every runtime that measures task times before it runs any task.
  static void calibrate();

  static std::int64_t now() noexcept {
#if defined(__x86_64__)
    if (use_tsc_) return static_cast<std::int64_t>(__rdtsc());
#endif
    return monotonic_ns();
  }
  // A span of ticks in nanoseconds.
  static std::int64_t to_ns(std::int64_t ticks) noexcept {
    return static_cast<std::int64_t>(static_cast<double>(ticks) * ns_per_tick_);
  }
  static std::int64_t monotonic_ns() noexcept {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }

 private:
  // Written once, inside calibrate()'s std::call_once, before the first timed runtime runs a
  // task; read by its threads after (their start, or call_once's return, orders the reads).
  static inline bool use_tsc_ = false;
  static inline double ns_per_tick_ = 1.0;
};

}  // namespace spool::detail
