// The cooperative budget of the task being polled on this thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "spool/detail/atomic.hpp"

namespace spool::detail {

// Budget units a task may spend in one poll (tokio uses the same figure).
inline constexpr std::uint32_t kPollBudget = 128;

// Gives the task polled in this scope a fresh budget, and restores the previous one
// (unlimited outside any task) afterwards. Every cooperative point of the poll also reads
// `cancel_bit` in `state` (the task's state word): once abort() or a shutdown sets it, each
// point ends the poll, so that even a loop that awaits nothing else is cancelled.
// yield_if_requested also ends it on `woken_bit` (woken during this poll: a timeout's timer
// fired, say), so that the future that woke it gets polled.
class BudgetScope {
 public:
  BudgetScope(const Atomic<std::uint64_t>& state, std::uint64_t cancel_bit,
              std::uint64_t woken_bit) noexcept;
  ~BudgetScope();
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  std::int64_t saved_units_;
  const Atomic<std::uint64_t>* saved_state_;
  std::uint64_t saved_cancel_bit_;
  std::uint64_t saved_woken_bit_;
};

// Around an executor run on this thread (enter_executor): the futures it polls are not
// the task that may be in a poll here (a blocking call's block_on), so they get no budget
// limit, no cancel and no yield request of that task's; the task's are back at the exit.
void enter_executor_budget() noexcept;
void exit_executor_budget() noexcept;

// Makes `request` the flag this thread's tasks read to learn that the scheduler asks them to
// yield (docs/levels.md), for the scope's lifetime; null: never asked. Set by a worker of a
// runtime with more than one level, around its loop.
class YieldRequestScope {
 public:
  explicit YieldRequestScope(const std::atomic<bool>* request) noexcept;
  ~YieldRequestScope();
  YieldRequestScope(const YieldRequestScope&) = delete;
  YieldRequestScope& operator=(const YieldRequestScope&) = delete;

 private:
  const std::atomic<bool>* saved_;
};

}  // namespace spool::detail
