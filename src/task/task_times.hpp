// A task's time counters (spool::TaskTimes), kept by a runtime that measures task times
// (Builder::measure_task_times): stamped at the spawn, at the wake that queues the task, and
// around each poll. docs/observability.md, "Task times".
#pragma once

#include <time.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "spool/task_meta.hpp"

namespace spool::detail {

// The clock of task times: CLOCK_MONOTONIC, as steady_clock, read through the vDSO.
inline std::int64_t task_clock_ns() noexcept {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Every field is plain std::atomic, relaxed: figures for display, ordered with nothing. The
// claimer (RUNNING) writes all but woken_ns, with a load and a store (never an RMW);
// woken_ns is written by the wake that queues the task, whose queue entry then carries it
// to the claimer (and by the claimer at a poll's end, before the task becomes idle, so that
// a later wake's stamp comes after). Any thread reads them (Runtime::tasks()).
struct TaskTimeCounters {
  std::atomic<std::uint64_t> busy_ns{0};
  std::atomic<std::uint64_t> scheduled_ns{0};
  std::atomic<std::uint64_t> idle_ns{0};
  std::atomic<std::uint64_t> longest_poll_ns{0};
  std::atomic<std::int64_t> poll_started_ns;   // of the poll in progress, the last, or spawn
  std::atomic<std::int64_t> poll_ended_ns{0};  // of the last poll, or the spawn
  std::atomic<std::int64_t> woken_ns{0};       // the wake that queued it, or poll_ended_ns
  std::array<std::atomic<std::uint32_t>, TaskTimes::kPollBuckets> histogram{};

  explicit TaskTimeCounters(std::int64_t spawned_ns) noexcept
      : poll_started_ns(spawned_ns), poll_ended_ns(spawned_ns), woken_ns(spawned_ns) {}

  // The wake that queues the task (its waker's thread, before schedule()).
  void woken(std::int64_t now) noexcept { woken_ns.store(now, std::memory_order_relaxed); }
  // A poll starts: the time since the last poll's end was idle until the wake, then queued.
  void poll_started(std::int64_t now) noexcept;
  // The poll that poll_started began ends (before the task can be woken again).
  void poll_ended(std::int64_t now) noexcept;
  // The figures as of `now`, the current period included; `running`, `idle`: the task's
  // state when read (neither: queued). RUNNING is also a claim that does not poll (an
  // inspection, a cancel) or a poll about to start: a period counts as busy only once its
  // poll_started stamp is later than the last poll's end. A read racing a poll's edge may
  // count a few nanoseconds twice or not at all: figures for display.
  TaskTimes read(std::int64_t now, bool running, bool idle) const noexcept;

 private:
  static void add(std::atomic<std::uint64_t>& counter, std::int64_t ns) noexcept {
    if (ns <= 0) return;
    counter.store(counter.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(ns),
                  std::memory_order_relaxed);
  }
};

inline void TaskTimeCounters::poll_started(std::int64_t now) noexcept {
  const std::int64_t ended = poll_ended_ns.load(std::memory_order_relaxed);
  const std::int64_t woken = woken_ns.load(std::memory_order_relaxed);
  add(idle_ns, woken - ended);
  add(scheduled_ns, now - (woken > ended ? woken : ended));
  poll_started_ns.store(now, std::memory_order_relaxed);
}

inline void TaskTimeCounters::poll_ended(std::int64_t now) noexcept {
  const std::int64_t took = now - poll_started_ns.load(std::memory_order_relaxed);
  add(busy_ns, took);
  if (took > 0 &&
      static_cast<std::uint64_t>(took) > longest_poll_ns.load(std::memory_order_relaxed))
    longest_poll_ns.store(static_cast<std::uint64_t>(took), std::memory_order_relaxed);
  std::atomic<std::uint32_t>& bucket =
      histogram[TaskTimes::bucket_of(std::chrono::nanoseconds(took))];
  bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  poll_ended_ns.store(now, std::memory_order_relaxed);
  woken_ns.store(now, std::memory_order_relaxed);  // a self-wake's: not idle at all
}

inline TaskTimes TaskTimeCounters::read(std::int64_t now, bool running, bool idle) const noexcept {
  using std::chrono::nanoseconds;
  const auto ns = [](const std::atomic<std::uint64_t>& c) {
    return nanoseconds(static_cast<std::int64_t>(c.load(std::memory_order_relaxed)));
  };
  const auto since = [now](const std::atomic<std::int64_t>& stamp) {
    const std::int64_t d = now - stamp.load(std::memory_order_relaxed);
    return nanoseconds(d > 0 ? d : 0);
  };
  TaskTimes t;
  t.busy = ns(busy_ns);
  t.scheduled = ns(scheduled_ns);
  t.idle = ns(idle_ns);
  t.longest_poll = ns(longest_poll_ns);
  for (std::size_t i = 0; i < histogram.size(); ++i)
    t.poll_histogram[i] = histogram[i].load(std::memory_order_relaxed);
  const bool in_poll = poll_started_ns.load(std::memory_order_relaxed) >
                       poll_ended_ns.load(std::memory_order_relaxed);
  if (running && in_poll) {
    const nanoseconds so_far = since(poll_started_ns);
    t.busy += so_far;
    if (so_far > t.longest_poll) t.longest_poll = so_far;
  } else if (running || idle) {
    t.idle += since(poll_ended_ns);
  } else {
    // Queued: idle until the wake (if it came after the last poll), queued since.
    const std::int64_t ended = poll_ended_ns.load(std::memory_order_relaxed);
    const std::int64_t woken = woken_ns.load(std::memory_order_relaxed);
    if (woken > ended) t.idle += nanoseconds(woken - ended);
    t.scheduled += since(woken > ended ? woken_ns : poll_ended_ns);
  }
  return t;
}

}  // namespace spool::detail
