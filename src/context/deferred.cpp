#include "context/deferred.hpp"

#include "spool/core/yield.hpp"

namespace spool::detail {

namespace {
// The deferred-wake list of the scheduler running on this thread, or null (plain threads
// wake at once). Thread-local: no synchronisation.
thread_local DeferredWakes* current_list = nullptr;
}  // namespace

DeferredWakesScope::DeferredWakesScope(DeferredWakes* list) noexcept
    : ThreadLocalScope(current_list, list) {}

DeferredWakes* current_deferred() noexcept { return current_list; }

namespace {
// defer_wake of any waker but the polled task's own (out of line: the yield's path through
// defer_wake then saves no registers).
[[gnu::noinline]] void defer_other_wake(const Waker& waker) {
  if (current_list == nullptr) {
    waker.wake_by_ref();
    return;
  }
  current_list->push(waker);
}
}  // namespace

void defer_wake(const Waker& waker) {
  const RawWaker& raw = waker.as_raw();
  PollScope* poll = current_poll;
  if (current_list != nullptr && poll != nullptr && raw.data == poll->own_->data &&
      raw.vtable == poll->own_->vtable) {
    poll->deferred_self_ = true;
    return;
  }
  defer_other_wake(waker);
}

}  // namespace spool::detail
