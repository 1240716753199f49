// A task's time counters (spool::TaskTimes), kept by a runtime that measures task times
// (Builder::measure_task_times): stamped at the spawn, at the wake that queues the task, and
// around each poll. docs/observability.md, "Task times".
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "spool/task_meta.hpp"
#include "task/task_clock.hpp"

namespace spool::detail {

// Every field is plain std::atomic, relaxed: figures for display, ordered with nothing. The
// claimer (RUNNING) writes all but `wake`, with a load and a store (never an RMW);
// `wake` is written by the wake that queues the task, whose queue entry then carries it
// to the claimer (and by the claimer at a poll's end, before the task becomes idle, so that
// a later wake's stamp comes after). Any thread reads them (Runtime::tasks()). Stamps are
// TaskClock ticks; the sums are nanoseconds.
struct TaskTimeCounters {
  std::atomic<std::uint64_t> busy_ns{0};
  std::atomic<std::uint64_t> scheduled_ns{0};
  std::atomic<std::uint64_t> idle_ns{0};
  std::atomic<std::uint64_t> longest_poll_ns{0};
  std::atomic<std::int64_t> poll_start;  // of the poll in progress, the last, or the spawn
  std::atomic<std::int64_t> poll_end;    // of the last poll, or the spawn
  std::atomic<std::int64_t> wake;        // of the wake that queued it, or poll_end
  std::array<std::atomic<std::uint32_t>, TaskTimes::kPollBuckets> histogram{};

  explicit TaskTimeCounters(std::int64_t spawned) noexcept
      : poll_start(spawned), poll_end(spawned), wake(spawned) {}

  // The wake that queues the task (its waker's thread, before schedule()).
  void woken(std::int64_t now) noexcept { wake.store(now, std::memory_order_relaxed); }
  // A poll starts: the time since the last poll's end was idle until the wake, then queued.
  void poll_started(std::int64_t now) noexcept;
  // The poll that poll_started began ends (before the task can be woken again).
  void poll_ended(std::int64_t now) noexcept;
  // The figures as of `now`, the current period included; `running`, `idle`: the task's
  // state when read (neither: queued). RUNNING is also a claim that does not poll (an
  // inspection, a cancel) or a poll about to start: a period counts as busy only once its
  // poll_start stamp is later than the last poll's end. A read racing a poll's edge may
  // count a few nanoseconds twice or not at all: figures for display.
  TaskTimes read(std::int64_t now, bool running, bool idle) const noexcept;

 private:
  static void add(std::atomic<std::uint64_t>& counter, std::int64_t ticks) noexcept {
    if (ticks <= 0) return;
    const std::int64_t ns = TaskClock::to_ns(ticks);
    counter.store(counter.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(ns),
                  std::memory_order_relaxed);
  }
};

inline void TaskTimeCounters::poll_started(std::int64_t now) noexcept {
  const std::int64_t ended = poll_end.load(std::memory_order_relaxed);
  const std::int64_t woke = wake.load(std::memory_order_relaxed);
  add(idle_ns, woke - ended);
  add(scheduled_ns, now - (woke > ended ? woke : ended));
  poll_start.store(now, std::memory_order_relaxed);
}

inline void TaskTimeCounters::poll_ended(std::int64_t now) noexcept {
  const std::int64_t took = TaskClock::to_ns(now - poll_start.load(std::memory_order_relaxed));
  if (took > 0) {
    busy_ns.store(busy_ns.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(took),
                  std::memory_order_relaxed);
    if (static_cast<std::uint64_t>(took) > longest_poll_ns.load(std::memory_order_relaxed))
      longest_poll_ns.store(static_cast<std::uint64_t>(took), std::memory_order_relaxed);
  }
  std::atomic<std::uint32_t>& bucket =
      histogram[TaskTimes::bucket_of(std::chrono::nanoseconds(took))];
  bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  poll_end.store(now, std::memory_order_relaxed);
  wake.store(now, std::memory_order_relaxed);  // a self-wake's: not idle at all
}

inline TaskTimes TaskTimeCounters::read(std::int64_t now, bool running, bool idle) const noexcept {
  using std::chrono::nanoseconds;
  const auto ns = [](const std::atomic<std::uint64_t>& c) {
    return nanoseconds(static_cast<std::int64_t>(c.load(std::memory_order_relaxed)));
  };
  const auto span = [](std::int64_t from, std::int64_t to) {
    return nanoseconds(to > from ? TaskClock::to_ns(to - from) : 0);
  };
  TaskTimes t;
  t.busy = ns(busy_ns);
  t.scheduled = ns(scheduled_ns);
  t.idle = ns(idle_ns);
  t.longest_poll = ns(longest_poll_ns);
  for (std::size_t i = 0; i < histogram.size(); ++i)
    t.poll_histogram[i] = histogram[i].load(std::memory_order_relaxed);
  const std::int64_t started = poll_start.load(std::memory_order_relaxed);
  const std::int64_t ended = poll_end.load(std::memory_order_relaxed);
  const std::int64_t woke = wake.load(std::memory_order_relaxed);
  if (running && started > ended) {
    const nanoseconds so_far = span(started, now);
    t.busy += so_far;
    if (so_far > t.longest_poll) t.longest_poll = so_far;
  } else if (running || idle) {
    t.idle += span(ended, now);
  } else {
    // Queued: idle until the wake (if it came after the last poll), queued since.
    t.idle += span(ended, woke);
    t.scheduled += span(woke > ended ? woke : ended, now);
  }
  return t;
}

}  // namespace spool::detail
