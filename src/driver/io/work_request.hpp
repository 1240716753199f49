// WorkRequest: the flag that asks the thread in the I/O driver to run its work after its wait
// (the signal pump); set by any thread (tests/model/work_request_model.cpp checks it).
#pragma once

#include "spool/detail/atomic.hpp"

namespace spool::detail {

// The requester sets it, then wakes the thread in the driver (sticky), whose next wait
// returns and takes it. A take after a wait that returned for another reason comes before
// that wake's ordering: its acquire, paired with set's release, publishes the work.
class WorkRequest {
 public:
  // The requester, before its wake. Release: pairs with take's acquire.
  void set() noexcept { requested_.store(true, std::memory_order_release); }
  // After each wait: true if requested since the last take; cleared before the work runs so a
  // request during the run is taken next time. The relaxed load spares a locked instruction.
  bool take() noexcept {
    return requested_.load(std::memory_order_relaxed) &&
           requested_.exchange(false, std::memory_order_acquire);
  }

 private:
  Atomic<bool> requested_{false};  // see the class comment
};

}  // namespace spool::detail
