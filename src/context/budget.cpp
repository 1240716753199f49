#include "context/budget.hpp"

#include <utility>

#include "spool/coop.hpp"

namespace spool::detail {

constinit thread_local ThreadBudget thread_budget;

namespace {
// The budget of the poll that an executor on this thread (block_on) interrupted. One slot:
// executors do not nest.
thread_local ThreadBudget outside_executor;

// Both loads are relaxed (ThreadBudget, budget.hpp, says why).
bool state_has(const ThreadBudget& b, std::uint64_t bits) noexcept {
  return b.task_state != nullptr && (b.task_state->load(std::memory_order_relaxed) & bits);
}
bool yield_flag(const ThreadBudget& b) noexcept {
  return b.yield_request != nullptr && b.yield_request->load(std::memory_order_relaxed);
}
}  // namespace

void enter_executor_budget() noexcept {
  outside_executor = std::exchange(thread_budget, ThreadBudget{});
}
void exit_executor_budget() noexcept { thread_budget = outside_executor; }
ThreadBudget outside_executor_budget() noexcept { return outside_executor; }
void set_outside_executor_budget(const ThreadBudget& saved) noexcept { outside_executor = saved; }

YieldRequestScope::YieldRequestScope(const std::atomic<bool>* request) noexcept
    : ThreadLocalScope(thread_budget.yield_request, request) {}

bool yield_requested() noexcept {
  const ThreadBudget& b = thread_budget;
  return b.units >= 0 && (yield_flag(b) || state_has(b, kCoopCancelledBit | kCoopNotifiedBit));
}

bool coop_poll_proceed(Context& cx) noexcept {
  ThreadBudget& b = thread_budget;
  if (b.units < 0) return true;
  if (b.units > 0 && !yield_flag(b) && !state_has(b, kCoopCancelledBit)) {
    --b.units;
    return true;
  }
  cx.waker().wake_by_ref();
  return false;
}

}  // namespace spool::detail
