// Cooperative scheduling: the per-poll budget, yield_now (spool/core/yield.hpp) and
// consume_budget.
#pragma once

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/yield.hpp"

namespace spool {

namespace detail {
// Spends one unit of the running task's budget; false (cx's waker woken) when it is spent,
// a yield was requested or the task was cancelled: the caller returns pending. Unlimited
// outside a runtime task.
SPOOL_API bool coop_poll_proceed(Context& cx) noexcept;
// True if the polled task should end its poll: asked to yield (docs/levels.md), cancelled,
// or woken during this poll.
SPOOL_API bool yield_requested() noexcept;
}  // namespace detail

/// Spends one unit of the task's cooperative budget: ready while budget remains, else it
/// yields (and it is pending once the task is cancelled). For loops whose other awaits are
/// always ready, so that they cannot starve sibling tasks.
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

/// Ready at once unless the running task should give way: a higher level's task waits
/// (docs/levels.md), the task was cancelled, or it was woken during this poll (e.g. by the
/// timer of a `select` around it). Then it is pending once. For CPU-bound loops with no
/// other await: `co_await spool::yield_if_requested();` (docs/levels.md has the details).
class YieldIfRequested {
 public:
  /// Ready, unless the task should give way and this future has not yielded yet.
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
