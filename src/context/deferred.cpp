#include "context/deferred.hpp"

#include "spool/coop.hpp"

namespace spool::detail {

namespace {
// The deferred-wake list of the scheduler running on this thread, or null (plain threads
// wake at once). Thread-local: no synchronisation.
thread_local DeferredWakes* current_list = nullptr;
}  // namespace

DeferredWakesScope::DeferredWakesScope(DeferredWakes* list) noexcept
    : ThreadLocalScope(current_list, list) {}

DeferredWakes* current_deferred() noexcept { return current_list; }

void defer_wake(const Waker& waker) {
  if (current_list == nullptr) {
    waker.wake_by_ref();
    return;
  }
  const RawWaker& raw = waker.as_raw();
  if (current_poll != nullptr && raw.data == current_poll->own_->data &&
      raw.vtable == current_poll->own_->vtable) {
    current_poll->deferred_self_ = true;
    return;
  }
  current_list->push(waker);
}

}  // namespace spool::detail
