// DriverLock: the try-lock that makes one thread at a time the driver's holder, and the flag
// by which a scheduler thread that found it taken asks the holder to hand the driver over.
#pragma once

#include "spool/detail/atomic.hpp"

namespace spool::detail {

class DriverLock {
 public:
  // Acquire: pairs with unlock's release half, so the new holder sees the stack as left.
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  // For a scheduler thread about to park: takes the lock or, finding it taken, announces that
  // it parks without the driver and tries once more. False: a holder that looks after it
  // lets go (maintain's take_announcement) sees the announcement; the others hand the driver
  // over or park in it anyway, and a stale announcement only costs one spurious hand-over.
  bool try_lock_or_announce() noexcept {
    if (try_lock()) return true;
    parked_without_driver_.store(true, std::memory_order_seq_cst);
    return !locked_.exchange(true, std::memory_order_seq_cst);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_seq_cst); }
  bool is_locked() const noexcept { return locked_.load(std::memory_order_seq_cst); }
  // After unlock: true if a thread announced a park since the last call (the caller hands
  // the driver over to a parked thread).
  bool take_announcement() noexcept {
    return parked_without_driver_.load(std::memory_order_seq_cst) &&
           parked_without_driver_.exchange(false, std::memory_order_seq_cst);
  }

 private:
  // Exchange(true) takes it (acquire; seq_cst for an announced retry); store(false, seq_cst)
  // releases it. Driver::follow loads it (seq_cst) after its own seq_cst increment: store
  // buffering with unlock's store and the load of the follower count that follows it.
  Atomic<bool> locked_{false};
  // Stored true (seq_cst) by try_lock_or_announce before its retry; loaded and exchanged false
  // (seq_cst) by take_announcement after the holder's unlock. Store buffering against the two
  // RMWs on locked_: either the retry takes the lock or the holder sees the flag
  // (tests/model/driver_lock_model.cpp).
  Atomic<bool> parked_without_driver_{false};
};

}  // namespace spool::detail
