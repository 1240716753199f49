// What a scheduler with levels counts around each poll (docs/levels.md), shared by both
// flavours: per-channel poll counters.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "spool/metrics.hpp"
#include "task/harness.hpp"

namespace spool::detail {

// A channel's poll counters, read (relaxed) by metrics().
struct ChannelCounters {
  std::atomic<std::uint64_t> polls{0};
  std::atomic<std::int64_t> busy_ns{0};

  // Counts one poll that took `busy`, by the one thread that writes these counters (relaxed
  // loads and stores: no RMW on the polling path).
  void record(std::chrono::nanoseconds busy) noexcept {
    polls.store(polls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    busy_ns.store(busy_ns.load(std::memory_order_relaxed) + busy.count(),
                  std::memory_order_relaxed);
  }
  // The same for counters that any thread may write (relaxed RMWs).
  void record_shared(std::chrono::nanoseconds busy) noexcept {
    polls.fetch_add(1, std::memory_order_relaxed);
    busy_ns.fetch_add(busy.count(), std::memory_order_relaxed);
  }
};

// Adds what `counters` counted to a channel's metrics.
inline void add_counters(ChannelMetrics& m, const ChannelCounters& counters) noexcept {
  m.polled += counters.polls.load(std::memory_order_relaxed);
  m.busy_time += std::chrono::nanoseconds(counters.busy_ns.load(std::memory_order_relaxed));
}

// Polls `t` (run_task) on a thread of a runtime with levels; returns how long the poll took,
// for the counters of the task's channel (read t->channel before: the poll may free the task).
inline std::chrono::nanoseconds timed_poll(TaskHeader* t, ReactorSlot* slot) {
  const auto start = std::chrono::steady_clock::now();
  run_task(t, slot);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start);
}

}  // namespace spool::detail
