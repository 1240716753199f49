// The task-local values in force on this thread: the chain of spool::TaskLocal scopes whose
// poll is under way (spool/task_local.hpp), and how a child that runs apart from its parent
// (a scope's child, a stolen fork child) is polled inside its parent's chain.
#pragma once

#include "spool/config.hpp"
#include "spool/core/context.hpp"

namespace spool::detail {

// One TaskLocal scope's value. Lives in its scope's future, which does not move once polled.
struct TaskLocalNode {
  const void* key = nullptr;              // the TaskLocal
  const void* value = nullptr;            // its value, a T
  const TaskLocalNode* parent = nullptr;  // the enclosing scope's, fixed at the first poll
};

// The innermost scope being polled on this thread (null: none), and the swap of it that
// installs another. Written only by this thread, around a poll (TaskLocalsInstalled); a node
// it points to is immutable once linked, so children on other threads may read a chain
// captured from it. Out of line (src/task/task_locals.cpp) on purpose: an inlined read of a
// thread_local in a coroutine body may reuse the address computed before a co_await, i.e.
// the thread the task resumed away from (clang: llvm/llvm-project#47179, fixed in clang 16).
SPOOL_API const TaskLocalNode* current_task_locals() noexcept;
SPOOL_API const TaskLocalNode* exchange_task_locals(const TaskLocalNode* chain) noexcept;

// Makes `chain` this thread's task-local chain for its lifetime (one poll), then restores
// the one before.
class TaskLocalsInstalled {
 public:
  explicit TaskLocalsInstalled(const TaskLocalNode* chain) noexcept
      : saved_(exchange_task_locals(chain)) {}
  ~TaskLocalsInstalled() { exchange_task_locals(saved_); }
  TaskLocalsInstalled(const TaskLocalsInstalled&) = delete;
  TaskLocalsInstalled& operator=(const TaskLocalsInstalled&) = delete;

 private:
  const TaskLocalNode* saved_;
};

// Polls the future `f` refers to with `chain` installed: a child that runs as a task of its
// own sees the values in force where its parent (scope or join) was polled.
template <class F>
class WithTaskLocals {
 public:
  WithTaskLocals(const TaskLocalNode* chain, F& f) noexcept : chain_(chain), f_(&f) {}
  auto poll(Context& cx) {
    TaskLocalsInstalled installed(chain_);
    return f_->poll(cx);
  }

 private:
  const TaskLocalNode* chain_;
  F* f_;
};

}  // namespace spool::detail
