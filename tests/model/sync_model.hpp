// What the models of the sync primitives (include/spool/sync/) share.
//
// The Semaphore's out-of-line half (src/sync/semaphore.cpp) is compiled into the model
// itself: the models link no spool library. The two runtime hooks it calls are stubbed as
// outside a runtime task (plain block_on): the cooperative budget never runs out, and a
// deferred wake is an immediate one. Include this header from one source file per model.
#pragma once

#include "model/counted_waker.hpp"
#include "model/run_model.hpp"
#include "spool/coop.hpp"
#include "sync/semaphore.cpp"  // NOLINT(bugprone-suspicious-include): see above

namespace spool::detail {
bool coop_poll_proceed(Context&) noexcept { return true; }
void defer_wake(const Waker& waker) { waker.wake_by_ref(); }
}  // namespace spool::detail

namespace spool::model {

/// A task that parks on a pending poll: returns (to poll again) once a wake-up reached `task`
/// after the poll that started when it had `seen` wakes. A wake-up that never comes
/// is a lost one: once the `done` counter (each of the other threads adds 1, release, after
/// its last step) reaches `threads`, nothing can wake the task any more, and this asserts.
inline void park_until_woken(Task& task, int seen, spool::detail::Atomic<int>& done, int threads) {
  for (;;) {
    // Relaxed: only tells that a wake came; the poll that follows synchronises through the
    // primitive's own atomics.
    if (task.wakes.load(std::memory_order_relaxed) != seen) return;
    // Acquire: pairs with the other threads' release fetch_add, after their last wake.
    if (done.load(std::memory_order_acquire) == threads) {
      // Relaxed: the acquire above orders every wake the others made before this load.
      RL_ASSERT(task.wakes.load(std::memory_order_relaxed) != seen);  // else: lost wake-up
      return;
    }
    rl::yield(1, $);  // a spin: let the others run
  }
}

}  // namespace spool::model
