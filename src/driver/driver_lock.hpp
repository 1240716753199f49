// DriverLock: the try-lock that lets one thread at a time in the driver, and the flag by which
// a scheduler thread that found it taken asks for a hand-over.
#pragma once

#include "spool/detail/atomic.hpp"

namespace spool::detail {

class DriverLock {
 public:
  // Acquire: pairs with unlock's store, so the next thread in sees the stack as left.
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  // Takes the lock or announces a park without the driver and tries once more. False: the
  // thread in the driver sees the announcement when it leaves (a stale one costs one
  // spurious hand-over).
  bool try_lock_or_announce() noexcept {
    if (try_lock()) return true;
    parked_without_driver_.store(true, std::memory_order_seq_cst);
    return !locked_.exchange(true, std::memory_order_seq_cst);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_seq_cst); }
  bool is_locked() const noexcept { return locked_.load(std::memory_order_seq_cst); }
  // After unlock: true if a park was announced since the last call (then hand over).
  bool take_announcement() noexcept {
    return parked_without_driver_.load(std::memory_order_seq_cst) &&
           parked_without_driver_.exchange(false, std::memory_order_seq_cst);
  }

 private:
  // Exchange(true) takes it (acquire; seq_cst for an announced retry); store(false, seq_cst)
  // releases it. Driver::wait_for_driver loads it (seq_cst) after its seq_cst increment: store
  // buffering with unlock's store and its load of the waiter count.
  Atomic<bool> locked_{false};
  // Stored true (seq_cst) by try_lock_or_announce before its retry; loaded and exchanged false
  // (seq_cst) by take_announcement after unlock. Store buffering against the two RMWs on
  // locked_: either the retry takes the lock or the thread leaving the driver sees the flag
  // (tests/model/driver_lock_model.cpp).
  Atomic<bool> parked_without_driver_{false};
};

}  // namespace spool::detail
