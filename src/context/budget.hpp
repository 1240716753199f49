// The cooperative budget of the task being polled on this thread.
#pragma once

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

}  // namespace spool::detail
