#include "context/budget.hpp"

#include "spool/coop.hpp"

namespace spool::detail {

namespace {
// What the budget check reads, in one thread-local so that it costs one TLS access.
struct ThreadBudget {
  // Remaining units for the task running on this thread; negative: unlimited.
  std::int64_t units = -1;
  // The worker's yield-request flag (YieldRequestScope), or null. The flag is set by a thread
  // that queued a higher-level task (release) and cleared by the worker before it picks its
  // next task (MultiThread::run_task_on); read here relaxed: a request seen late only delays
  // the yield to the next check.
  const std::atomic<bool>* yield_request = nullptr;
};
thread_local ThreadBudget budget;
}  // namespace

BudgetScope::BudgetScope() noexcept : saved_(budget.units) { budget.units = kPollBudget; }
BudgetScope::~BudgetScope() { budget.units = saved_; }

YieldRequestScope::YieldRequestScope(const std::atomic<bool>* request) noexcept
    : saved_(budget.yield_request) {
  budget.yield_request = request;
}
YieldRequestScope::~YieldRequestScope() { budget.yield_request = saved_; }

bool yield_requested() noexcept {
  return budget.units >= 0 && budget.yield_request != nullptr &&
         budget.yield_request->load(std::memory_order_relaxed);
}

bool coop_poll_proceed(Context& cx) noexcept {
  ThreadBudget& b = budget;
  if (b.units < 0) return true;
  if (b.units > 0 &&
      (b.yield_request == nullptr || !b.yield_request->load(std::memory_order_relaxed))) {
    --b.units;
    return true;
  }
  cx.waker().wake_by_ref();
  return false;
}

}  // namespace spool::detail
