#include "context/deferred.hpp"

#include "spool/coop.hpp"

namespace spool::detail {

namespace {
// The deferred-wake list of the scheduler running on this thread, or null (plain threads
// wake at once), and the task poll in progress here, or null. Thread-local: no
// synchronisation.
thread_local DeferredWakes* current_list = nullptr;
thread_local PollScope* current_poll = nullptr;
}  // namespace

DeferredWakesScope::DeferredWakesScope(DeferredWakes* list) noexcept : saved_(current_list) {
  current_list = list;
}
DeferredWakesScope::~DeferredWakesScope() { current_list = saved_; }

PollScope::PollScope(const RawWaker& own) noexcept : own_(own), saved_(current_poll) {
  current_poll = this;
}
PollScope::~PollScope() { current_poll = saved_; }

DeferredWakes* current_deferred() noexcept { return current_list; }

void defer_wake(const Waker& waker) {
  if (current_list == nullptr) {
    waker.wake_by_ref();
    return;
  }
  const RawWaker& raw = waker.as_raw();
  if (current_poll != nullptr && raw.data == current_poll->own_.data &&
      raw.vtable == current_poll->own_.vtable) {
    current_poll->deferred_self_ = true;
    return;
  }
  current_list->push(waker);
}

}  // namespace spool::detail
