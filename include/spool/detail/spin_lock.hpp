// A small test-and-test-and-set lock for critical sections of a few instructions.
#pragma once

#include <sched.h>

#include <atomic>

#include "spool/detail/atomic.hpp"

namespace spool::detail {

/// Meets the Lockable requirements (std::lock_guard works). Uncontended, it costs one
/// exchange to lock and one store to unlock, where a pthread mutex costs several times
/// that. Under contention it spins on a plain load, relaxing the CPU each turn, then yields
/// the CPU, so a preempted holder is not fought for a whole time slice.
class SpinLock {
 public:
  void lock() noexcept {
    // Acquire: pairs with unlock's release, so the critical section sees the last holder's
    // writes.
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    lock_contended();
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  // Out of line: inlined, the loop made every caller save registers it uncontended never needs.
  [[gnu::noinline]] void lock_contended() noexcept {
    for (int spins = 0;; ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          sched_yield();
        } else {
          cpu_relax();
        }
      }
      if (!locked_.exchange(true, std::memory_order_acquire)) return;  // acquire: as in lock
    }
  }

  std::atomic<bool> locked_{false};
};

}  // namespace spool::detail
