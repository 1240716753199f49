// Deferred wake-ups: where yield_now parks its waker on a runtime thread.
#pragma once

#include <vector>

#include "spool/core/waker.hpp"

namespace spool::detail {

class TaskHeader;

// The wake-ups of tasks that yielded on this thread. A yielding task is not requeued at
// once: it waits here until its worker runs out of other work or reaches its next
// maintenance tick, so that the rest of the queue, and the inject queue, get their turn.
// Touched only by the owning thread.
class DeferredWakes {
 public:
  // Wakes every deferred task (each goes to the back of the run queue); true if any.
  bool wake_all();
  void push(const Waker& waker) { wakers_.push_back(waker); }
  // A spool task that yielded itself, NOTIFIED, with the reference its entry owns.
  void push_task(TaskHeader* task) { tasks_.push_back(task); }
  bool empty() const noexcept { return wakers_.empty() && tasks_.empty(); }

 private:
  std::vector<Waker> wakers_;
  std::vector<TaskHeader*> tasks_;
};

// The calling thread's deferred-wake list, or null off runtime threads.
DeferredWakes* current_deferred() noexcept;

// Installs `list` as the calling thread's deferred-wake list for the guard's lifetime.
class DeferScope {
 public:
  explicit DeferScope(DeferredWakes* list) noexcept;
  ~DeferScope();
  DeferScope(const DeferScope&) = delete;
  DeferScope& operator=(const DeferScope&) = delete;

 private:
  DeferredWakes* saved_;
};

}  // namespace spool::detail
