#include "scheduler/current_thread/current_thread.hpp"

#include <stdexcept>

#include "context/budget.hpp"
#include "context/current.hpp"
#include "context/deferred.hpp"
#include "scheduler/pick.hpp"
#include "task/harness.hpp"

namespace spool::detail {

CurrentThread::CurrentThread(RuntimeShared* runtime, const RuntimeConfig& config,
                             const LevelTable& levels, OwnedTasks& owned,
                             std::shared_ptr<Driver> driver)
    : runtime_(runtime),
      config_(config),
      levels_(levels),
      owned_(owned),
      driver_(std::move(driver)),
      injects_(new InjectQueue[levels.num_channels()]),
      edf_(levels.any_earliest_deadline_first() ? new EdfQueue[levels.num_channels()] : nullptr),
      local_(levels.num_channels()),
      cursor_(levels),
      channel_counters_(new ChannelCounters[levels.num_channels()]) {
  // A block_on or background thread left the driver: the driving thread takes it over (it
  // wakes and parks again, in the driver).
  driver_->set_handoff([this] { parker_->unpark(); });
}

void CurrentThread::schedule(TaskHeader* t, bool) noexcept {
  const std::uint16_t channel = t->channel;  // (t may run and be gone once it is queued)
  const std::uint16_t level = levels_.level_of(channel);
  if (is_edf(channel)) {
    if (!edf_[channel].push(t)) {
      drop_task_refs(t);  // shut down
      return;
    }
    request_yield(level);
    if (!is_driver_thread()) parker_->unpark();
    return;
  }
  if (is_driver_thread()) {
    if (local_closed_) {
      drop_task_refs(t);  // shut down: the task is (being) cancelled anyway
      return;
    }
    local_[channel].push_back(t);
    local_len_.store(local_len_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    request_yield(level);
    return;
  }
  if (!injects_[channel].push(t)) {
    drop_task_refs(t);  // shut down
    return;
  }
  request_yield(level);
  parker_->unpark();
}

void CurrentThread::request_yield(std::uint16_t level) noexcept {
  if (levels_.num_levels() == 1 || levels_.round_robin()) return;
  if (yield_.running_level.load(std::memory_order_seq_cst) > level) {
    yield_.requested.store(true, std::memory_order_release);
  }
}

void CurrentThread::block_in_place(const std::function<void()>& fn) {
  if (is_driver_thread()) {
    throw std::logic_error(
        "spool::block_in_place called on a current_thread runtime: its one thread runs every "
        "task and cannot be handed over; use spawn_blocking, or a multi_thread runtime");
  }
  fn();
}

bool CurrentThread::try_drive() noexcept {
  if (is_shutdown()) return false;
  if (driver_taken_.exchange(true, std::memory_order_acquire)) return false;
  // A shutdown that began meanwhile waits for this role: drive_until gives it back at once.
  driver_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  return true;
}

void CurrentThread::release_driver() noexcept {
  // A shutdown that began may have given up waiting for the role (shutdown_timeout): the
  // queue is this thread's to drain. (close_and_stop sets the flag before it waits, and
  // drain_queues, with the role, drains again: an empty queue then.)
  if (is_shutdown()) close_local();
  driver_thread_.store(std::thread::id(), std::memory_order_relaxed);
  driver_taken_.store(false, std::memory_order_release);
  // After the store: a waiter registered before we take the lock is unparked here; one that
  // registers after it sees driver_taken_ false (the lock orders the two) and does not park.
  // The shutdown waits on role_released_ under the same lock.
  {
    std::lock_guard lock(waiters_mutex_);
    for (ThreadParker* p : waiters_) p->unpark();
  }
  role_released_.notify_all();
}

void CurrentThread::close_local() noexcept {
  for (TaskFifo& fifo : local_) {
    while (TaskHeader* t = fifo.pop_front()) drop_task_refs(t);
  }
  local_closed_ = true;
  local_len_.store(0, std::memory_order_relaxed);
}

bool CurrentThread::wait_for_root(std::atomic<bool>& root_woken, ThreadParker& parker) {
  for (;;) {
    if (root_woken.exchange(false, std::memory_order_acquire)) return false;
    if (try_drive()) return true;
    {
      std::lock_guard lock(waiters_mutex_);
      waiters_.push_back(&parker);
    }
    // Re-check once registered: the driver may have left before it could see us. Once shut
    // down, no thread drives again: wait for the root alone.
    if (!root_woken.load(std::memory_order_acquire) &&
        (driver_taken_.load(std::memory_order_acquire) || is_shutdown())) {
      parker.park_in(nullptr);
    }
    std::lock_guard lock(waiters_mutex_);
    std::erase(waiters_, &parker);
  }
}

bool CurrentThread::has_runnable() const noexcept {
  // Asked under the time driver's jump mutex (can_auto_advance): by the role holder, which
  // reads its own local_len_, or by a face while no block_on runs — the last one ended with
  // Driver::block_on_ended, which takes the same mutex after release_driver, so the length it
  // left is visible here.
  if (local_len_.load(std::memory_order_relaxed) != 0) return true;
  for (std::uint16_t ch = 0; ch < levels_.num_channels(); ++ch) {
    if (!injects_[ch].is_empty()) return true;
    if (is_edf(ch) && !edf_[ch].is_empty()) return true;
  }
  return false;
}

TaskHeader* CurrentThread::pop_local(std::uint16_t channel) noexcept {
  TaskHeader* t = local_[channel].pop_front();
  if (t)
    local_len_.store(local_len_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  return t;
}

bool CurrentThread::level_has_work(std::uint16_t level) const noexcept {
  for (std::uint16_t ch = levels_.first_channel(level); ch < levels_.end_channel(level); ++ch) {
    if (!local_[ch].empty() || !injects_[ch].is_empty()) return true;
    if (is_edf(ch) && !edf_[ch].is_empty()) return true;
  }
  return false;
}

TaskHeader* CurrentThread::next_task() noexcept {
  ++tick_;
  return pick_by_level(
      levels_, cursor_,
      [&](std::uint16_t level) { return levels_.num_levels() == 1 || level_has_work(level); },
      [&](std::uint16_t level) {
        return pick_by_channel(levels_, cursor_, level, [&](std::uint16_t ch) {
          if (is_edf(ch)) return edf_[ch].pop(std::chrono::steady_clock::now());
          InjectQueue& inject = injects_[ch];
          return pick_next_task(
              tick_, config_.global_queue_interval, [&] { return inject.pop(); },
              [&] { return pop_local(ch); }, [&] { return inject.pop(); });
        });
      });
}

bool CurrentThread::run_batch(ReactorSlot& slot, DeferredWakes& deferred) {
  bool ran = false;
  const bool levels = levels_.num_levels() > 1;
  for (std::uint32_t i = 0; i < config_.event_interval; ++i) {
    if (levels) {
      wake_deferred(deferred);
      yield_.clear_before_pick();
    }
    TaskHeader* t = next_task();
    if (t == nullptr) break;
    if (levels && !may_poll_now(t)) continue;
    polls_.store(polls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (levels_.num_channels() == 1) {
      run_task(t, &slot);
    } else {
      const std::uint16_t channel = t->channel;  // (the poll may free t)
      channel_counters_[channel].record(timed_poll(t, &slot));
      // A due timer fires after every poll (see MultiThread::run_worker).
      driver_->maintain_if_due();
    }
    ran = true;
  }
  if (levels) yield_.running_level.store(0, std::memory_order_relaxed);  // between batches
  return ran;
}

bool CurrentThread::may_poll_now(TaskHeader* t) noexcept {
  const std::uint16_t level = levels_.level_of(t->channel);
  yield_.running_level.store(level, std::memory_order_seq_cst);
  if (levels_.round_robin()) return true;
  for (std::uint16_t higher = 0; higher < level; ++higher) {
    if (!level_has_work(higher)) continue;
    // Queued (from another thread) since the pick: `t` goes back, the next pick takes it.
    if (is_edf(t->channel)) {
      if (!edf_[t->channel].push(t)) drop_task_refs(t);
    } else {
      local_[t->channel].push_back(t);
      local_len_.store(local_len_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    return false;
  }
  return true;
}

bool CurrentThread::drive_until(std::atomic<bool>& root_woken, ReactorSlot& slot) {
  // The driver parks on the runtime's parker: remote schedules unpark it, and so does the
  // driver's root waker (which also unparks the thread's own parker; see RootWaker).
  ThreadParker& parker = *parker_;
  RuntimeThreadScope own_thread(runtime_);
  // HighestFirst with more than one level: the tasks polled here honour yield requests.
  YieldRequestScope yield_requests(
      levels_.num_levels() > 1 && !levels_.round_robin() ? &yield_.requested : nullptr);
  DeferredWakes deferred;
  bool shut_down = false;
  {
    DeferredWakesScope defer_here(&deferred);
    for (;;) {
      if (is_shutdown()) {
        shut_down = true;  // the shutdown waits for this role: give it back
        break;
      }
      // A batch of tasks first, then the root if it was woken: a root that wakes itself
      // (yield_now, a spent budget) must not starve the tasks that share its thread.
      bool ran = run_batch(slot, deferred);
      bool requeued = wake_deferred(deferred);  // tasks that yielded rejoin after each batch
      const bool root = root_woken.exchange(false, std::memory_order_acquire);
      // Due timers fire even while tasks, or a root that keeps waking itself, keep the thread
      // from parking (a busy root alone used to starve every timer).
      if (ran || root) driver_->maintain();
      if (root) break;
      if (!ran && !requeued) {
        // root_woken: a relaxed peek, a hint only; the exchange (acquire) at the top of the
        // loop is what pairs with the root waker's store.
        if (driver_->busy_poll(config_.busy_poll, [&] {
              return has_runnable() || root_woken.load(std::memory_order_relaxed) || is_shutdown();
            })) {
          continue;
        }
        if (config_.on_thread_park) config_.on_thread_park();
        parks_.store(parks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        driver_->park_thread(parker);  // in the driver, unless a background thread holds it
        if (config_.on_thread_unpark) config_.on_thread_unpark();
      }
    }
  }
  // Into the local queue, while this thread still holds the role: the next driver runs
  // them, or the shutdown drains them (dropped at once if it already did).
  wake_deferred(deferred);
  return !shut_down;
}

std::size_t CurrentThread::close_and_stop(
    std::optional<std::chrono::steady_clock::time_point> deadline) {
  shutdown_.store(true, std::memory_order_release);
  for (std::uint16_t ch = 0; ch < levels_.num_channels(); ++ch) {
    injects_[ch].close();
    if (is_edf(ch)) edf_[ch].close();
  }
  parker_->unpark();  // a parked driver wakes, sees the shutdown and gives the role back
  if (is_driver_thread()) {
    // Shut down from a root future this thread polls (a task's shutdown runs on a detached
    // thread): it holds the role already.
    shutdown_holds_role_ = true;
    return 0;
  }
  std::unique_lock lock(waiters_mutex_);
  // Acquire pairs with release_driver's release store: the queue as the driver left it.
  auto take_role = [&] { return !driver_taken_.exchange(true, std::memory_order_acquire); };
  if (deadline) {
    shutdown_holds_role_ = role_released_.wait_until(lock, *deadline, take_role);
  } else {
    role_released_.wait(lock, take_role);
    shutdown_holds_role_ = true;
  }
  return shutdown_holds_role_ ? 0 : 1;
}

void CurrentThread::drain_queues() noexcept {
  // Without the role (a driver stuck in a poll past the deadline), the local queue is the
  // driver's: leave it.
  if (shutdown_holds_role_) close_local();
  for (std::uint16_t ch = 0; ch < levels_.num_channels(); ++ch) {
    while (TaskHeader* t = injects_[ch].pop()) drop_task_refs(t);
    if (!is_edf(ch)) continue;
    while (TaskHeader* t = edf_[ch].pop(std::chrono::steady_clock::time_point::min())) {
      drop_task_refs(t);
    }
  }
}

void CurrentThread::fill_metrics(RuntimeMetrics& m) {
  m.workers.push_back(WorkerMetrics{polls_.load(std::memory_order_relaxed), 0,
                                    parks_.load(std::memory_order_relaxed),
                                    local_len_.load(std::memory_order_relaxed)});
  for (std::uint16_t ch = 0; ch < levels_.num_channels(); ++ch) {
    const std::size_t len = injects_[ch].len();
    m.inject_queue_depth += len;
    // The local FIFOs are the driving thread's: their lengths are not read from here.
    m.channels[ch].queued += len;
    if (is_edf(ch)) {
      m.channels[ch].queued += edf_[ch].len();
      m.channels[ch].deadline_misses = edf_[ch].misses();
    }
    if (levels_.num_channels() > 1) add_counters(m.channels[ch], channel_counters_[ch]);
  }
  if (levels_.num_channels() == 1) m.channels[0].polled = polls_.load(std::memory_order_relaxed);
}

}  // namespace spool::detail
