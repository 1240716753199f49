// What a scheduler with levels keeps around each poll (docs/levels.md), shared by both
// flavours: per-channel counters, and the level of the running task with the flag that asks
// it to yield.
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

// One polling thread's (a worker's, a current-thread driver's) answer to "whom do I ask to
// yield" and the request itself.
struct YieldState {
  // The level of the task polled now (0 when idle: nothing to ask to yield). Stored by the
  // polling thread before each poll (seq_cst), which then looks again for queued work of a
  // higher level (seq_cst loads); loaded (seq_cst) by a thread that queued a task (after its
  // seq_cst count or queue-length update) to choose whom to ask: the Dekker pairing that makes
  // either the poller see the new task or the queuer see the poller's level.
  std::atomic<std::uint16_t> running_level{0};
  // Set (release) by a thread that queued a higher-level task no idle thread can take; read
  // by the budget check of the task polled here (relaxed, context/budget.cpp); cleared by the
  // polling thread before each pick (clear_before_pick). Also read (relaxed) by a requester
  // choosing whom to ask, to pass over a thread asked already (a hint: a stale read at worst
  // asks one thread twice, or another one too).
  std::atomic<bool> requested{false};

  // Called before the polling thread picks its next task by level: that pick answers any
  // request made so far. The exchange (acq_rel) that takes a request pairs with its release
  // store, so the pick sees the task whose queueing led to it; a request made after the
  // exchange stays set for the next poll. (A plain load-then-store could erase a request
  // made between the two.)
  void clear_before_pick() noexcept {
    if (requested.load(std::memory_order_relaxed)) {
      requested.exchange(false, std::memory_order_acq_rel);
    }
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
