// WorkRequest: the flag that asks an I/O driver's holder to run its own work (the signal
// pump) after its wait; set by any thread (tests/model/work_request_model.cpp checks it).
#pragma once

#include "spool/detail/atomic.hpp"

namespace spool::detail {

// True from a request until the holder takes it. The requester sets it, then wakes the
// holder with a sticky wake, so that the holder's next wait returns and the take after it
// finds the flag. The holder may also take it after a wait that returned for another
// reason, before the wake's own ordering reaches it: the acquire of the take, paired with
// the release of the set, is what makes the requester's earlier writes (the work itself,
// set before the first request) visible to the run then.
class WorkRequest {
 public:
  // The requester, before it wakes the holder. Release: pairs with take's acquire.
  void set() noexcept { requested_.store(true, std::memory_order_release); }
  // The holder, after each wait: true (and cleared, before the work runs, so that a request
  // made during the run is taken at the next wait) if a request came since the last take.
  // A relaxed load first: a wait without a request pays no locked instruction.
  bool take() noexcept {
    return requested_.load(std::memory_order_relaxed) &&
           requested_.exchange(false, std::memory_order_acquire);
  }

 private:
  Atomic<bool> requested_{false};  // see the class comment
};

}  // namespace spool::detail
