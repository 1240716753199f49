#include "context/budget.hpp"

#include "spool/coop.hpp"

namespace spool::detail {

namespace {
// Remaining units for the task running on this thread; negative: unlimited.
thread_local std::int64_t budget = -1;
}  // namespace

BudgetScope::BudgetScope() noexcept : saved_(budget) { budget = kPollBudget; }
BudgetScope::~BudgetScope() { budget = saved_; }

bool coop_poll_proceed(Context& cx) noexcept {
  if (budget < 0) return true;
  if (budget > 0) {
    --budget;
    return true;
  }
  cx.waker().wake_by_ref();
  return false;
}

}  // namespace spool::detail
