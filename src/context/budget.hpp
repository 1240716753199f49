// The cooperative budget of the task being polled on this thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace spool::detail {

// Budget units a task may spend in one poll (tokio uses the same figure).
inline constexpr std::uint32_t kPollBudget = 128;

// Gives the task polled in this scope a fresh budget, and restores the previous one
// (unlimited outside any task) afterwards.
class BudgetScope {
 public:
  BudgetScope() noexcept;
  ~BudgetScope();
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  std::int64_t saved_;
};

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
