// Deferred wakes, behind yield_now on a runtime thread: a yielding task's wake waits in the
// thread's list until its scheduler runs out of work or reaches its next maintenance tick,
// so the rest of the queues get their turn. task/ drains it (wake_deferred, task/harness.hpp):
// only it can requeue a spool task.
#pragma once

#include <span>
#include <vector>

#include "context/thread_local_scope.hpp"
#include "spool/core/waker.hpp"

namespace spool::detail {

class TaskHeader;

// The wake-ups deferred on one thread. Touched only by that thread.
class DeferredWakes {
 public:
  // A foreign (non-task) waker, cloned: woken when the list is drained.
  void push(const Waker& waker) { wakers_.push_back(waker); }
  // A spool task that deferred its own wake-up: it is NOTIFIED, and the list's entry owns
  // its run reference (no Waker clone).
  void push_task(TaskHeader* task) { tasks_.push_back(task); }
  bool empty() const noexcept { return wakers_.empty() && tasks_.empty(); }

  // Hands every entry out: on_tasks(std::span<TaskHeader* const>) with the tasks, in the
  // order they yielded (scheduling only queues a task, so the list cannot grow meanwhile;
  // it keeps its capacity, so steady-state yields allocate nothing), then on_waker(Waker&&)
  // for each foreign waker, taken out of the list first since it runs arbitrary code. True
  // if there was any entry.
  template <class OnTasks, class OnWaker>
  bool drain(OnTasks on_tasks, OnWaker on_waker) {
    if (empty()) return false;
    if (!tasks_.empty()) on_tasks(std::span<TaskHeader* const>(tasks_));
    tasks_.clear();
    std::vector<Waker> wakers;
    wakers.swap(wakers_);
    for (Waker& w : wakers) on_waker(std::move(w));
    return true;
  }

 private:
  std::vector<Waker> wakers_;
  std::vector<TaskHeader*> tasks_;
};

// Installs `list` as the calling thread's deferred-wake list for the scope's lifetime
// (a scheduler's run loop does this); restores the previous one afterwards.
class DeferredWakesScope : ThreadLocalScope<DeferredWakes*> {
 public:
  explicit DeferredWakesScope(DeferredWakes* list) noexcept;
};

// Marks the poll of a spool task whose waker is `own` on this thread. While it lasts, a
// deferred wake of `own` (the task yielding itself) only sets a flag: the poll's end then
// puts the task itself on the list (DeferredWakes::push_task), which costs no clone.
// Inline: it brackets every poll of every task. `own` must outlive the scope (it is read,
// not copied: a 16-byte copy of a RawWaker just written stalls on store forwarding).
class PollScope {
 public:
  explicit PollScope(const RawWaker& own) noexcept;
  ~PollScope();
  PollScope(const PollScope&) = delete;
  PollScope& operator=(const PollScope&) = delete;

  // True if the task deferred its own wake-up during the poll (read once the poll is over).
  bool deferred_self() const noexcept { return deferred_self_; }
  // The waker of the task being polled.
  const RawWaker& own() const noexcept { return *own_; }

 private:
  friend void defer_wake(const Waker& waker);
  const RawWaker* own_;
  bool deferred_self_ = false;
  PollScope* saved_;
};

// The task poll in progress on this thread, or null. Thread-local: no synchronisation.
inline thread_local PollScope* current_poll = nullptr;

inline PollScope::PollScope(const RawWaker& own) noexcept : own_(&own), saved_(current_poll) {
  current_poll = this;
}
inline PollScope::~PollScope() { current_poll = saved_; }

// The calling thread's deferred-wake list, or null off runtime threads.
DeferredWakes* current_deferred() noexcept;

}  // namespace spool::detail
