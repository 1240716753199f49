#include "context/budget.hpp"

#include <utility>

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
  // The polled task's state word and its CANCELLED and NOTIFIED bits (BudgetScope), or null.
  // The bits are set by abort() or a shutdown, and by a wake, with acq_rel RMWs; read here
  // relaxed: a bit seen late only delays the end of the poll to the next cooperative point.
  const Atomic<std::uint64_t>* task_state = nullptr;
  std::uint64_t cancel_bit = 0;
  std::uint64_t woken_bit = 0;

  bool state_has(std::uint64_t bits) const noexcept {
    return task_state != nullptr && (task_state->load(std::memory_order_relaxed) & bits);
  }
  bool yield_flag() const noexcept {
    return yield_request != nullptr && yield_request->load(std::memory_order_relaxed);
  }
  bool asked_to_yield() const noexcept { return yield_flag() || state_has(cancel_bit); }
};
thread_local ThreadBudget budget;
// The budget of the poll that an executor on this thread (block_on) interrupted. One slot:
// executors do not nest.
thread_local ThreadBudget outside_executor;
}  // namespace

void enter_executor_budget() noexcept { outside_executor = std::exchange(budget, ThreadBudget{}); }
void exit_executor_budget() noexcept { budget = outside_executor; }

BudgetScope::BudgetScope(const Atomic<std::uint64_t>& state, std::uint64_t cancel_bit,
                         std::uint64_t woken_bit) noexcept
    : saved_units_(budget.units),
      saved_state_(budget.task_state),
      saved_cancel_bit_(budget.cancel_bit),
      saved_woken_bit_(budget.woken_bit) {
  budget.units = kPollBudget;
  budget.task_state = &state;
  budget.cancel_bit = cancel_bit;
  budget.woken_bit = woken_bit;
}
BudgetScope::~BudgetScope() {
  budget.units = saved_units_;
  budget.task_state = saved_state_;
  budget.cancel_bit = saved_cancel_bit_;
  budget.woken_bit = saved_woken_bit_;
}

YieldRequestScope::YieldRequestScope(const std::atomic<bool>* request) noexcept
    : saved_(budget.yield_request) {
  budget.yield_request = request;
}
YieldRequestScope::~YieldRequestScope() { budget.yield_request = saved_; }

bool yield_requested() noexcept {
  const ThreadBudget& b = budget;
  return b.units >= 0 && (b.yield_flag() || b.state_has(b.cancel_bit | b.woken_bit));
}

bool coop_poll_proceed(Context& cx) noexcept {
  ThreadBudget& b = budget;
  if (b.units < 0) return true;
  if (b.units > 0 && !b.asked_to_yield()) {
    --b.units;
    return true;
  }
  cx.waker().wake_by_ref();
  return false;
}

}  // namespace spool::detail
