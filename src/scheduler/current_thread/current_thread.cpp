#include "scheduler/current_thread/current_thread.hpp"

#include <stdexcept>
#include <thread>

#include "runtime/defer.hpp"
#include "task/harness.hpp"

namespace spool::detail {

CurrentThread::CurrentThread(RuntimeConfig config) : RuntimeShared(std::move(config)) {}

CurrentThread::~CurrentThread() { shutdown(std::nullopt); }

void CurrentThread::schedule(TaskHeader* t, bool) noexcept {
  if (driver_thread_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    local_.push_back(t);
    local_len_.store(local_.size(), std::memory_order_relaxed);
    return;
  }
  if (!inject_.push(t)) {
    drop_task_refs(t);  // shut down
    return;
  }
  parker_->unpark();
}

void CurrentThread::block_in_place(const std::function<void()>& fn) {
  if (driver_thread_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    throw std::logic_error(
        "spool::block_in_place called on a current_thread runtime: its one thread runs every "
        "task and cannot be handed over; use spawn_blocking, or a multi_thread runtime");
  }
  fn();
}

bool CurrentThread::can_drive() noexcept {
  if (driver_taken_.exchange(true, std::memory_order_acquire)) return false;
  driver_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  return true;
}

void CurrentThread::release_driver() noexcept {
  driver_thread_.store(std::thread::id(), std::memory_order_relaxed);
  driver_taken_.store(false, std::memory_order_release);
  // After the store: a waiter registered before we take the lock is unparked here; one that
  // registers after it sees driver_taken_ false (the lock orders the two) and does not park.
  std::lock_guard lock(waiters_mutex_);
  for (ThreadParker* p : waiters_) p->unpark();
}

bool CurrentThread::wait_for_root(std::atomic<bool>& root_woken, ThreadParker& parker,
                                  ReactorSlot& slot) {
  for (;;) {
    if (root_woken.exchange(false, std::memory_order_acquire)) return false;
    if (can_drive()) return true;
    {
      std::lock_guard lock(waiters_mutex_);
      waiters_.push_back(&parker);
    }
    // Re-check once registered: the driver may have left before it could see us.
    if (!root_woken.load(std::memory_order_acquire) &&
        driver_taken_.load(std::memory_order_acquire)) {
      parker.park(slot.hook());
    }
    std::lock_guard lock(waiters_mutex_);
    std::erase(waiters_, &parker);
  }
}

bool CurrentThread::run_batch(ReactorSlot& slot) {
  bool ran = false;
  for (std::uint32_t i = 0; i < config_.event_interval; ++i) {
    TaskHeader* t = nullptr;
    if (++tick_ % config_.global_queue_interval == 0) t = inject_.pop();
    if (t == nullptr && !local_.empty()) {
      t = local_.front();
      local_.pop_front();
      local_len_.store(local_.size(), std::memory_order_relaxed);
    }
    if (t == nullptr) t = inject_.pop();
    if (t == nullptr) break;
    polls_.store(polls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    run_task(t, &slot);
    ran = true;
  }
  return ran;
}

void CurrentThread::drive_until(std::atomic<bool>& root_woken, ReactorSlot& slot) {
  // The driver parks on the runtime's parker: remote schedules unpark it, and so does the
  // driver's root waker (which also unparks the thread's own parker; see RootWaker).
  ThreadParker& parker = *parker_;
  DeferredWakes deferred;
  {
    DeferScope defer_here(&deferred);
    for (;;) {
      if (is_shutdown()) {
        // No tasks any more: wait for the root alone.
        while (!root_woken.exchange(false, std::memory_order_acquire)) parker.park(slot.hook());
        break;
      }
      // A batch of tasks first, then the root if it was woken: a root that wakes itself
      // (yield_now, a spent budget) must not starve the tasks that share its thread.
      bool ran = run_batch(slot);
      bool requeued = deferred.wake_all();  // tasks that yielded rejoin after each batch
      if (root_woken.exchange(false, std::memory_order_acquire)) break;
      if (!ran && !requeued) {
        if (config_.on_thread_park) config_.on_thread_park();
        parks_.store(parks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        parker.park(slot.hook());
        if (config_.on_thread_unpark) config_.on_thread_unpark();
      }
    }
  }
  deferred.wake_all();  // into the local queue: this thread still drives
}

void CurrentThread::close_and_stop(std::optional<std::chrono::steady_clock::time_point>) {
  inject_.close();
}

void CurrentThread::drain_queues() noexcept {
  // Shutdown runs after every block_on returned (Runtime is being destroyed) or on a
  // thread that is not driving; either way no driver touches local_ now.
  for (TaskHeader* t : local_) drop_task_refs(t);
  local_.clear();
  while (TaskHeader* t = inject_.pop()) drop_task_refs(t);
}

void CurrentThread::fill_metrics(RuntimeMetrics& m) {
  m.workers.push_back(WorkerMetrics{polls_.load(std::memory_order_relaxed), 0,
                                    parks_.load(std::memory_order_relaxed),
                                    local_len_.load(std::memory_order_relaxed)});
  m.inject_queue_depth = inject_.len();
}

}  // namespace spool::detail
