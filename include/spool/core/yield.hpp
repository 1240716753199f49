// yield_now: a future that is pending once (its task goes behind the other runnable work),
// then ready; and its awaiter in a Task or Generator, in place of the generic leaf.
#pragma once

#include <coroutine>
#include <typeinfo>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task_chain.hpp"

namespace spool {

namespace detail {
// Wakes `waker` later: on a runtime thread, once the thread has run its other work (see
// yield_now); elsewhere at once.
SPOOL_API void defer_wake(const Waker& waker);
class YieldAwaiter;
}  // namespace detail

/// A future that is pending once, then ready: the task goes behind every other runnable
/// task. On a runtime thread its wake-up is deferred until the worker has run the rest of
/// its queue (or reached its next maintenance tick), so that tasks queued elsewhere — the
/// inject queue, other workers — also get their turn. `co_await spool::yield_now();`
class YieldNow {
 public:
  /// Pending on the first poll, ready on the next.
  Poll<void> poll(Context& cx) {
    if (ready_or_defer(cx.waker())) return Poll<void>::ready();
    return pending;
  }

 private:
  friend class detail::YieldAwaiter;  // co_await in a Task or Generator: the same step
  // True if it yielded already; else defers `waker`'s wake and returns false (pending this
  // once, ready from then on).
  bool ready_or_defer(const Waker& waker) {
    if (yielded_) return true;
    yielded_ = true;
    detail::defer_wake(waker);
    return false;
  }

  bool yielded_ = false;
};
/// Yields the current task once. See YieldNow.
inline YieldNow yield_now() { return {}; }

namespace detail {

// Awaits yield_now() in a Task or Generator: YieldNow's poll, inlined into the awaiting coroutine
// (the first poll defers the wake and is pending; the leaf's next poll is ready at once).
class YieldAwaiter : PendingLeaf {
 public:
  YieldAwaiter(YieldNow& y, TaskChain& chain) noexcept
      : PendingLeaf{&ready_at_once, &kKind}, yield_(y), chain_(chain) {}
  YieldAwaiter(const YieldAwaiter&) = delete;
  YieldAwaiter& operator=(const YieldAwaiter&) = delete;

  bool await_ready() { return yield_.ready_or_defer(chain_.cx->waker()); }
  template <class P>
  void await_suspend(std::coroutine_handle<P> awaiting) noexcept {
    chain_.wait_on(this, awaiting, awaiting.promise());
  }
  void await_resume() const noexcept {}

 private:
  static bool ready_at_once(PendingLeaf*, Context&) noexcept { return true; }
  static constexpr LeafKind kKind{&typeid(YieldNow), nullptr};

  YieldNow& yield_;
  TaskChain& chain_;
};

}  // namespace detail

}  // namespace spool
