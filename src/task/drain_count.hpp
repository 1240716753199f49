// What a shutdown waits for before it cancels (docs/levels.md, "Drain on close"): the live
// tasks of complete-on-close channels, and the CloseGuards held.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>

#include "spool/core/atomic_waker.hpp"

namespace spool::detail {

class DrainCount {
 public:
  // A task of a complete-on-close channel was bound (+1) or left the owned-task list (-1).
  void add_task() noexcept { add(tasks_); }
  void task_done() noexcept { done(tasks_); }
  // A CloseGuard was taken (+1) or released (-1).
  void add_guard() noexcept { add(guards_); }
  void guard_done() noexcept { done(guards_); }

  // For the shutdown's report.
  std::int64_t tasks() const noexcept { return tasks_.load(std::memory_order_acquire); }
  std::int64_t guards() const noexcept { return guards_.load(std::memory_order_acquire); }

  // True once nothing is pending; else registers `waker`, woken when the count next drops to
  // zero (register, then re-check: a drop in between is seen by the re-check). For a
  // shutdown thread that drives a current-thread runtime.
  bool poll_drained(const Waker& waker) {
    if (drained()) return true;
    waker_.register_waker(waker);
    return drained();
  }
  // Blocks until nothing is pending (true) or until `deadline` (false), in real time. For a
  // shutdown thread that only waits (the workers of a multi-thread runtime do the work).
  bool wait_drained(std::optional<std::chrono::steady_clock::time_point> deadline) {
    std::unique_lock lock(mutex_);
    auto pred = [&] { return drained(); };
    if (!deadline) {
      zero_.wait(lock, pred);
      return true;
    }
    return zero_.wait_until(lock, *deadline, pred);
  }
  // Wakes both kinds of waiter, as a drop to zero does (a shutdown's deadline, for one).
  void wake_waiters() noexcept {
    waker_.wake();
    std::lock_guard lock(mutex_);
    zero_.notify_all();
  }

 private:
  bool drained() const noexcept { return pending_.load(std::memory_order_acquire) == 0; }
  void add(std::atomic<std::int64_t>& count) noexcept {
    count.fetch_add(1, std::memory_order_relaxed);
    pending_.fetch_add(1, std::memory_order_relaxed);
  }
  void done(std::atomic<std::int64_t>& count) noexcept {
    count.fetch_sub(1, std::memory_order_relaxed);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) wake_waiters();
  }

  // pending_ = tasks_ + guards_, in one word, so that "nothing pending" is one read: a spawn
  // made under a guard before the guard's release is counted before the release uncounts the
  // guard, and the sum never passes through zero in between (two separate reads could see
  // the tasks before the spawn and the guards after the release). Incremented relaxed (an
  // increment is ordered before its own decrement by the task's or guard's owner),
  // decremented acq_rel; read with acquire by drained(), after which the drainer sees what
  // the last holder did. tasks_ and guards_ only feed the report (relaxed RMWs; acquire reads).
  std::atomic<std::int64_t> pending_{0};
  std::atomic<std::int64_t> tasks_{0};
  std::atomic<std::int64_t> guards_{0};
  AtomicWaker waker_;  // a driving shutdown's wait (poll_drained)
  std::mutex mutex_;   // with zero_: a waiting shutdown's wait (wait_drained)
  std::condition_variable zero_;
};

}  // namespace spool::detail
