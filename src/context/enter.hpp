// Marks a thread as running an executor, so that a nested event loop is refused.
#pragma once

#include "context/budget.hpp"
#include "context/deferred.hpp"

namespace spool::detail {

// Marks the calling thread as running the executor `what` (e.g. "spool::block_on").
// Throws NestedEventLoop, naming both, if the thread already runs one.
void enter_executor(const char* what);
// Ends what enter_executor began.
void exit_executor() noexcept;

// Whether the executor this thread runs is `what` (the pointer enter_executor was given).
bool running_executor_is(const char* what) noexcept;

// Lets the calling thread enter an executor again for its lifetime, although it runs one:
// a worker inside block_in_place whose core (its loop's queues) went to another thread, so
// that an executor started here blocks no one else's tasks. Puts the outer one back after.
// Its wakes are not deferred meanwhile: the worker's list would be drained only by its loop,
// after the blocking function returns (a yield_now in a block_on's root never came back).
class ExecutorHandOff {
 public:
  ExecutorHandOff() noexcept;
  ~ExecutorHandOff();
  ExecutorHandOff(const ExecutorHandOff&) = delete;
  ExecutorHandOff& operator=(const ExecutorHandOff&) = delete;

 private:
  const char* executor_;
  ThreadBudget outside_budget_;
  DeferredWakesScope wake_at_once_{nullptr};
};

// Names the executor running on this thread `what` for its lifetime: the same loop, in a
// state that a NestedEventLoop's message should explain.
class ExecutorRenamed {
 public:
  explicit ExecutorRenamed(const char* what) noexcept;
  ~ExecutorRenamed();
  ExecutorRenamed(const ExecutorRenamed&) = delete;
  ExecutorRenamed& operator=(const ExecutorRenamed&) = delete;

 private:
  const char* previous_;
};

// RAII form of enter_executor / exit_executor.
class EnterGuard {
 public:
  explicit EnterGuard(const char* what) { enter_executor(what); }
  ~EnterGuard() { exit_executor(); }
  EnterGuard(const EnterGuard&) = delete;
  EnterGuard& operator=(const EnterGuard&) = delete;
};

}  // namespace spool::detail
