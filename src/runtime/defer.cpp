#include "runtime/defer.hpp"

#include "spool/coop.hpp"
#include "task/harness.hpp"

namespace spool::detail {

namespace {
// The deferred-wake list of the runtime thread running here, or null (plain threads wake
// at once). Thread-local: no synchronisation.
thread_local DeferredWakes* current_list = nullptr;
}  // namespace

DeferScope::DeferScope(DeferredWakes* list) noexcept : saved_(current_list) { current_list = list; }
DeferScope::~DeferScope() { current_list = saved_; }

DeferredWakes* current_deferred() noexcept { return current_list; }

bool DeferredWakes::wake_all() {
  if (empty()) return false;
  // Scheduling only queues a task (it never polls), so tasks_ cannot grow meanwhile;
  // clearing keeps its capacity, so steady-state yields allocate nothing.
  for (TaskHeader* t : tasks_) schedule_yielded(t);
  tasks_.clear();
  // Foreign wakers run arbitrary code: take them out first.
  std::vector<Waker> wakers;
  wakers.swap(wakers_);
  for (Waker& w : wakers) wake_yielded(std::move(w));
  return true;
}

void defer_wake(const Waker& waker) {
  if (current_list == nullptr) {
    waker.wake_by_ref();
  } else if (!defer_own_wake(waker)) {
    current_list->push(waker);
  }
}

}  // namespace spool::detail
