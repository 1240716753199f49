// The cooperative budget of the task being polled on this thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "context/thread_local_scope.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::detail {

// Budget units a task may spend in one poll (tokio uses the same figure).
inline constexpr std::uint32_t kPollBudget = 128;

// The bits of a task's state word that the cooperative points read: CANCELLED (abort or a
// shutdown: every point ends the poll, so even a loop that awaits nothing else is cancelled)
// and NOTIFIED (woken during this poll: yield_if_requested ends it, so the future that woke
// it is polled). task/harness.cpp checks they are task/header.hpp's.
inline constexpr std::uint64_t kCoopCancelledBit = 1u << 3;
inline constexpr std::uint64_t kCoopNotifiedBit = 1u << 2;

// What the cooperative points read, in one thread-local so that a check costs one TLS access.
struct ThreadBudget {
  // Remaining units for the task running on this thread; negative: unlimited.
  std::int64_t units = -1;
  // The worker's yield-request flag (YieldRequestScope), or null. The flag is set by a thread
  // that queued a higher-level task (release) and cleared by the worker before it picks its
  // next task (MultiThread::run_task_on); read relaxed: a request seen late only delays the
  // yield to the next check.
  const std::atomic<bool>* yield_request = nullptr;
  // The polled task's state word (BudgetScope), or null. Its bits above are set by abort(),
  // a shutdown or a wake with acq_rel RMWs; read relaxed: a bit seen late only delays the
  // end of the poll to the next cooperative point.
  const Atomic<std::uint64_t>* task_state = nullptr;
};
extern constinit thread_local ThreadBudget thread_budget;

// Gives the task polled in this scope (`state`: its state word) a fresh budget, and restores
// the previous one (unlimited outside any task) afterwards. Inline: it wraps every poll.
class BudgetScope {
 public:
  explicit BudgetScope(const Atomic<std::uint64_t>& state) noexcept
      : saved_units_(thread_budget.units), saved_state_(thread_budget.task_state) {
    thread_budget.units = kPollBudget;
    thread_budget.task_state = &state;
  }
  ~BudgetScope() {
    thread_budget.units = saved_units_;
    thread_budget.task_state = saved_state_;
  }
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  std::int64_t saved_units_;
  const Atomic<std::uint64_t>* saved_state_;
};

// Around an executor run on this thread (enter_executor): the futures it polls are not
// the task that may be in a poll here (a blocking call's block_on), so they get no budget
// limit, no cancel and no yield request of that task's; the task's are back at the exit.
void enter_executor_budget() noexcept;
void exit_executor_budget() noexcept;
// The one slot enter_executor_budget fills, saved and put back around an ExecutorHandOff
// (enter.hpp): an executor entered inside it must leave the outer executor's slot as it was.
ThreadBudget outside_executor_budget() noexcept;
void set_outside_executor_budget(const ThreadBudget& saved) noexcept;

// Makes `request` the flag this thread's tasks read to learn that the scheduler asks them to
// yield (docs/levels.md), for the scope's lifetime; null: never asked. Set by a worker of a
// runtime with more than one level, around its loop.
class YieldRequestScope : ThreadLocalScope<const std::atomic<bool>*> {
 public:
  explicit YieldRequestScope(const std::atomic<bool>* request) noexcept;
};

}  // namespace spool::detail
