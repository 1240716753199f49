// The readers holding tasks under inspection claims (harness.cpp inspect_task), counted per
// runtime so that its shutdown waits for them before it cancels what is left.
#pragma once

#include <cstdint>

#include "spool/detail/atomic.hpp"

namespace spool::detail {

// A shutdown sets CANCELLED on every task, then waits until no reader is left; a reader enters
// before its claim, which refuses a CANCELLED task, and leaves after its give-back. So no claim
// starts once the shutdown waits, and every claim held then is given back (the task
// rescheduled if it must be cancelled) before the shutdown cancels the tasks itself.
class InspectionCount {
 public:
  // A reader, before its claim. AcqRel RMW: it and busy()'s RMW are ordered in the count's
  // modification order; if busy() reads a value before this one, busy()'s release (after
  // its CANCELLED RMWs) is acquired here, and the claim's CAS sees CANCELLED.
  void enter() noexcept { count_.fetch_add(1, std::memory_order_acq_rel); }
  // The reader, after its give-back. Release: the give-back (a schedule) happens before the
  // shutdown's cancels, which busy()'s acquire orders after it.
  void leave() noexcept { count_.fetch_sub(1, std::memory_order_release); }
  // The shutdown, after it set CANCELLED on every task: true while a reader holds a claim or
  // may still take one. An RMW, not a load: a load could miss an enter() whose claim then
  // misses the CANCELLED (the store-buffering pattern).
  bool busy() noexcept { return count_.fetch_add(0, std::memory_order_acq_rel) != 0; }

 private:
  // Readers inside enter()..leave(). Written by readers (enter, leave) and read by the
  // shutdown (busy), all RMWs; the pairings are on each function above.
  Atomic<std::uint32_t> count_{0};
};

}  // namespace spool::detail
