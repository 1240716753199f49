#include "scheduler/current_thread/current_thread.hpp"

#include <stdexcept>

#include "context/budget.hpp"
#include "context/current.hpp"
#include "context/deferred.hpp"
#include "scheduler/picker.hpp"
#include "task/harness.hpp"

namespace spool::detail {

CurrentThread::CurrentThread(RuntimeShared* runtime, const RuntimeConfig& config,
                             const LevelTable& levels, OwnedTasks& owned,
                             std::shared_ptr<Driver> driver)
    : Scheduler(owned),
      runtime_(runtime),
      config_(config),
      levels_(levels),
      driver_(std::move(driver)),
      queues_(levels, 1),
      local_(levels.num_channels()),
      cursor_(levels) {
  // A block_on or background thread left the driver: the thread with the core takes it over (it
  // wakes and parks again, in the driver).
  driver_->set_hand_over([this] { parker_->unpark(); });
}

void CurrentThread::schedule(TaskHeader* t, bool) noexcept {
  const std::uint16_t channel = t->channel;  // (t may run and be gone once it is queued)
  const std::uint16_t level = levels_.level_of(channel);
  if (queues_.is_edf(channel)) {
    if (!queues_.push_edf(t)) return;  // shut down
    queues_.request_yield(level);
    if (!holds_core()) parker_->unpark();
    return;
  }
  if (holds_core()) {
    if (local_closed_) {
      drop_task_refs(t);  // shut down: the task is (being) cancelled anyway
      return;
    }
    queues_.count(t, 1);
    push_local(t);
    queues_.request_yield(level);
    return;
  }
  if (!queues_.push_inject(t, channel)) return;  // shut down
  queues_.request_yield(level);
  parker_->unpark();
}

void CurrentThread::push_local(TaskHeader* t) noexcept {
  local_[t->channel].push_back(t);
  local_len_.store(local_len_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void CurrentThread::block_in_place(const std::function<void()>& fn) {
  if (holds_core()) {
    throw std::logic_error(
        "spool::block_in_place called on a current_thread runtime: its one thread runs every "
        "task and cannot be handed over; use spawn_blocking, or a multi_thread runtime");
  }
  fn();
}

bool CurrentThread::try_take_core() noexcept {
  if (is_shutdown()) return false;
  if (core_taken_.exchange(true, std::memory_order_acquire)) return false;
  // A shutdown that began meanwhile waits for the core: run_until gives it back at once.
  core_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  state_.store(WorkerState::kRunning, std::memory_order_relaxed);
  return true;
}

void CurrentThread::release_core() noexcept {
  // A shutdown that began may have given up waiting for the core (shutdown_timeout): the
  // queue is this thread's to drain. (close_and_stop sets the flag before it waits, and
  // drain_queues, with the core, drains again: an empty queue then.)
  if (is_shutdown()) close_local();
  state_.store(WorkerState::kParked, std::memory_order_relaxed);  // until a thread drives it
  core_thread_.store(std::thread::id(), std::memory_order_relaxed);
  core_taken_.store(false, std::memory_order_release);
  // After the store: a waiter registered before we take the lock is unparked here; one that
  // registers after it sees core_taken_ false (the lock orders the two) and does not park.
  // The shutdown waits on core_released_ under the same lock.
  {
    std::lock_guard lock(waiters_mutex_);
    for (ThreadParker* p : waiters_) p->unpark();
  }
  core_released_.notify_all();
}

void CurrentThread::close_local() noexcept {
  for (auto& fifo : local_) {
    while (TaskHeader* t = fifo.pop_front()) {
      queues_.count(t, -1);
      drop_task_refs(t);
    }
  }
  local_closed_ = true;
  local_len_.store(0, std::memory_order_relaxed);
}

bool CurrentThread::wait_for_root(std::atomic<bool>& root_woken, ThreadParker& parker) {
  for (;;) {
    if (root_woken.exchange(false, std::memory_order_acquire)) return false;
    if (try_take_core()) return true;
    {
      std::lock_guard lock(waiters_mutex_);
      waiters_.push_back(&parker);
    }
    // Re-check once registered: the driver may have left before it could see us. Once shut
    // down, no thread drives again: wait for the root alone.
    if (!root_woken.load(std::memory_order_acquire) &&
        (core_taken_.load(std::memory_order_acquire) || is_shutdown())) {
      parker.park_in(nullptr);
    }
    std::lock_guard lock(waiters_mutex_);
    std::erase(waiters_, &parker);
  }
}

bool CurrentThread::has_runnable() const noexcept {
  // Asked under the time driver's jump mutex (can_auto_advance): by the core's thread, which
  // reads its own local_len_, or by a face while no block_on runs — the last one ended with
  // Driver::block_on_ended, which takes the same mutex after release_core, so the length it
  // left is visible here.
  return local_len_.load(std::memory_order_relaxed) != 0 || queues_.has_shared_work();
}

TaskHeader* CurrentThread::pop_local(std::uint16_t channel) noexcept {
  TaskHeader* t = local_[channel].pop_front();
  if (t)
    local_len_.store(local_len_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  return t;
}

struct CurrentThread::OwnQueues {
  CurrentThread& ct;
  TaskHeader* no_lifo_slot = nullptr;
  TaskHeader*& lifo_slot() noexcept { return no_lifo_slot; }
  TaskHeader* pop_local(std::uint16_t ch) noexcept { return ct.pop_local(ch); }
  TaskHeader* from_inject(std::uint16_t ch) noexcept { return ct.queues_.inject(ch).pop(); }
  TaskHeader* steal(std::uint16_t) noexcept { return nullptr; }  // nobody else to steal from
};

TaskHeader* CurrentThread::next_task() noexcept {
  ++tick_;
  OwnQueues own{*this};
  const std::uint32_t interval = config_.global_queue_interval;
  if (queues_.has_levels()) return pick_task<true>(queues_, cursor_, tick_, interval, own);
  return pick_task<false>(queues_, cursor_, tick_, interval, own);
}

bool CurrentThread::run_batch(ReactorSlot& slot, DeferredWakes& deferred) {
  bool ran = false;
  const bool levels = queues_.several_levels();
  YieldState& yield = queues_.yield(0);
  for (std::uint32_t i = 0; i < config_.event_interval; ++i) {
    if (levels) {
      wake_deferred(deferred);
      yield.clear_before_pick();
    }
    TaskHeader* t = next_task();
    if (t == nullptr) break;
    if (levels && !queues_.may_poll_now(yield, t, [&](TaskHeader* t) { push_local(t); })) {
      continue;
    }
    polls_.store(polls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (!queues_.has_levels()) {
      run_task(t, &slot);
    } else {
      const std::uint16_t channel = t->channel;  // (the poll may free t)
      queues_.counters(0, channel).record(timed_poll(t, &slot));
      // A due timer fires after every poll (see MultiThread::worker_loop).
      driver_->maintain_if_due();
    }
    ran = true;
  }
  if (levels) yield.running_level.store(0, std::memory_order_relaxed);  // between batches
  return ran;
}

bool CurrentThread::run_until(std::atomic<bool>& root_woken, ReactorSlot& slot) {
  // The driver parks on the runtime's parker: remote schedules unpark it, and so does the
  // driver's root waker (which also unparks the thread's own parker; see RootWaker).
  ThreadParker& parker = *parker_;
  RuntimeThreadScope own_thread(runtime_);
  // HighestFirst with more than one level: the tasks polled here honour yield requests.
  YieldRequestScope yield_requests(queues_.yields_on_request() ? &queues_.yield(0).requested
                                                               : nullptr);
  DeferredWakes deferred;
  bool shut_down = false;
  {
    DeferredWakesScope defer_here(&deferred);
    for (;;) {
      if (is_shutdown()) {
        shut_down = true;  // the shutdown waits for the core: give it back
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
        if (config_.on_thread_park) {
          config_.on_thread_park();
          // A task the hook spawned or woke is in this thread's own queue, which tells
          // nobody: run it rather than park on it (the unpark hook too: they stay paired).
          if (has_runnable()) {
            if (config_.on_thread_unpark) config_.on_thread_unpark();
            continue;
          }
        }
        parks_.store(parks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        state_.store(WorkerState::kParked, std::memory_order_relaxed);
        // In the driver, unless a background thread holds it.
        driver_->park_thread(parker, &state_);
        state_.store(WorkerState::kRunning, std::memory_order_relaxed);
        if (config_.on_thread_unpark) config_.on_thread_unpark();
      }
    }
  }
  // Into the local queue, while this thread still holds the core: the next driver runs
  // them, or the shutdown drains them (dropped at once if it already did).
  wake_deferred(deferred);
  return !shut_down;
}

std::size_t CurrentThread::close_and_stop(
    std::optional<std::chrono::steady_clock::time_point> deadline) {
  shutdown_.store(true, std::memory_order_release);
  queues_.close();
  parker_->unpark();  // a parked driver wakes, sees the shutdown and gives the core back
  if (holds_core()) {
    // Shut down from a root future this thread polls (a task's shutdown runs on a detached
    // thread): it holds the core already.
    shutdown_holds_core_ = true;
    return 0;
  }
  std::unique_lock lock(waiters_mutex_);
  // Acquire pairs with release_core's release store: the queue as the driver left it.
  auto take_core = [&] { return !core_taken_.exchange(true, std::memory_order_acquire); };
  if (deadline) {
    shutdown_holds_core_ = core_released_.wait_until(lock, *deadline, take_core);
  } else {
    core_released_.wait(lock, take_core);
    shutdown_holds_core_ = true;
  }
  return shutdown_holds_core_ ? 0 : 1;
}

void CurrentThread::drain_queues() noexcept {
  // Without the core (a driver stuck in a poll past the deadline), the local queue is the
  // driver's: leave it.
  if (shutdown_holds_core_) close_local();
  queues_.drain();
}

void CurrentThread::fill_metrics(RuntimeMetrics& m) {
  m.workers.push_back(WorkerMetrics{
      polls_.load(std::memory_order_relaxed), 0, parks_.load(std::memory_order_relaxed),
      local_len_.load(std::memory_order_relaxed), state_.load(std::memory_order_relaxed)});
  // The local FIFOs are the thread with the core's: their lengths are not read from here.
  queues_.fill_metrics(m);
  if (levels_.num_channels() == 1) m.channels[0].polled = polls_.load(std::memory_order_relaxed);
}

}  // namespace spool::detail
