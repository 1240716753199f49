// What a shutdown waits for before it cancels (docs/levels.md, "Drain on close"): the live
// tasks of complete-on-close channels, and the CloseGuards held.
#pragma once

#include <atomic>
#include <cstdint>

#include "spool/core/atomic_waker.hpp"

namespace spool::detail {

class DrainCount {
 public:
  // A task of a complete-on-close channel was bound (+1) or left the owned-task list (-1).
  void add_task() noexcept { tasks_.fetch_add(1, std::memory_order_relaxed); }
  void task_done() noexcept { done(tasks_); }
  // A CloseGuard was taken (+1) or released (-1).
  void add_guard() noexcept { guards_.fetch_add(1, std::memory_order_relaxed); }
  void guard_done() noexcept { done(guards_); }

  std::int64_t tasks() const noexcept { return tasks_.load(std::memory_order_acquire); }
  std::int64_t guards() const noexcept { return guards_.load(std::memory_order_acquire); }

  // True once both counts are zero; else registers `waker`, woken when either count next
  // drops to zero (register, then re-check: a drop in between is seen by the re-check).
  bool poll_drained(const Waker& waker) {
    if (drained()) return true;
    waker_.register_waker(waker);
    return drained();
  }

 private:
  bool drained() const noexcept { return tasks() == 0 && guards() == 0; }
  void done(std::atomic<std::int64_t>& count) noexcept {
    if (count.fetch_sub(1, std::memory_order_acq_rel) == 1) waker_.wake();
  }

  // Incremented relaxed (an increment is ordered before its decrement by the owner of the
  // task or guard), decremented acq_rel; read with acquire by poll_drained, after which the
  // drainer sees everything the last task or guard holder did.
  std::atomic<std::int64_t> tasks_{0};
  std::atomic<std::int64_t> guards_{0};
  AtomicWaker waker_;  // the shutdown's drain wait
};

}  // namespace spool::detail
