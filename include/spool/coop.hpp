// Cooperative scheduling: the per-poll budget, yield_now (spool/core/yield.hpp) and
// consume_budget.
#pragma once

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/yield.hpp"

namespace spool {

namespace detail {
// Spends one unit of the running task's budget. When it is spent, a yield was requested or
// the task was cancelled, wakes cx's waker and returns false: the caller returns pending so
// the task yields to the rest (or is cancelled). Outside a runtime task (plain block_on) the
// budget is unlimited.
SPOOL_API bool coop_poll_proceed(Context& cx) noexcept;
// True if the task polled on this thread should end its poll: the scheduler asked it to
// yield (a task of a higher priority level waits and no idle worker can take it;
// docs/levels.md), it was cancelled (JoinHandle::abort, or its runtime shutting down), or it
// was woken during this poll (a future around the loop has something to say).
SPOOL_API bool yield_requested() noexcept;
}  // namespace detail

/// A future that spends one unit of the task's cooperative budget: ready at once while
/// budget remains, else it yields. Put it in loops whose other awaits are always ready,
/// so that they cannot starve sibling tasks. Like every cooperative point, it is pending at
/// once when the task was cancelled (abort, or a shutdown): the task is then dropped.
class ConsumeBudget {
 public:
  /// Ready when budget remains; pending (and woken) when it is spent.
  Poll<void> poll(Context& cx) noexcept {
    if (detail::coop_poll_proceed(cx)) return Poll<void>::ready();
    return pending;
  }
};
/// Spends one unit of the task's budget. See ConsumeBudget.
inline ConsumeBudget consume_budget() { return {}; }

/// A future that is ready at once unless the scheduler asked the running task to yield (a
/// task of a higher priority level waits and no idle worker can take it; docs/levels.md):
/// then it is pending once, and the task goes back to its channel behind the waiting work.
/// For CPU-bound loops without other awaits: `co_await spool::yield_if_requested();`. The
/// budget check of every spool leaf (consume_budget, channels, timers...) honours the same
/// request on its own. It is also a cancellation point: once the task is cancelled
/// (JoinHandle::abort, or its runtime shutting down) it is pending, and the task is dropped
/// at the end of this poll — so a CPU-bound loop that awaits nothing else can be stopped.
/// And it yields once the task was woken during this poll (on a multi-thread runtime, say,
/// the timer of a `select(spool::sleep(d), loop)` fired on another worker), so that the
/// future that woke it is polled. (`timeout` polls its future before it arms its timer:
/// around a loop that never yields it arms nothing; put the sleep first in a `select`.) (A
/// current-thread runtime's one thread fires no timer while it is inside the loop: there,
/// `consume_budget` yields every 128 points.)
class YieldIfRequested {
 public:
  /// Ready, unless a yield was requested (or the task cancelled or woken) and this future
  /// has not yielded yet.
  Poll<void> poll(Context& cx) noexcept {
    if (yielded_ || !detail::yield_requested()) return Poll<void>::ready();
    yielded_ = true;
    cx.waker().wake_by_ref();
    return pending;
  }

 private:
  bool yielded_ = false;
};
/// Yields the current task if the scheduler asked it to. See YieldIfRequested.
inline YieldIfRequested yield_if_requested() { return {}; }

}  // namespace spool
