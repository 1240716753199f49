// The multi-thread scheduler's parts that only a runtime with levels uses: the EDF
// channels' shared queues and the request that a lower-level task yield (docs/levels.md).
#include "scheduler/multi_thread/multi_thread.hpp"

namespace spool::detail {

bool MultiThread::queue_edf(TaskHeader* t) noexcept {
  count_queued(t, 1);
  if (edf_[t->channel].push(t)) return true;
  count_queued(t, -1);
  drop_task_refs(t);  // shut down: the task is (being) cancelled anyway
  return false;
}

void MultiThread::push_edf(TaskHeader* t) noexcept {
  const std::uint16_t level = levels_.level_of(t->channel);  // (t may be gone once queued)
  if (!queue_edf(t)) return;
  const bool woke = notify_parked(Idle::Published::kInjectQueue);
  if (num_levels_ > 1 && !woke) request_yield(level);
}

TaskHeader* MultiThread::pop_edf(std::uint16_t channel) noexcept {
  TaskHeader* t = edf_[channel].pop(std::chrono::steady_clock::now());
  if (t != nullptr) count_queued(t, -1);
  return t;
}

void MultiThread::request_yield(std::uint16_t level) noexcept {
  if (round_robin_ || level + 1 == num_levels_) return;  // (nothing runs below the lowest)
  // The worker running the lowest level below `level`, if any, among those not asked already
  // (several tasks queued at once ask several workers): the one whose task matters least.
  WorkerShared* lowest = nullptr;
  std::uint16_t lowest_level = level;
  for (const auto& w : workers_) {
    if (w->yield.requested.load(std::memory_order_relaxed)) continue;
    const std::uint16_t l = w->yield.running_level.load(std::memory_order_seq_cst);
    if (l > lowest_level) {
      lowest_level = l;
      lowest = w.get();
    }
  }
  if (lowest != nullptr) lowest->yield.requested.store(true, std::memory_order_release);
}

}  // namespace spool::detail
