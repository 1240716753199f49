// Waiting for another thread without sleeping: spin on a condition, yielding the CPU.
#pragma once

#include <thread>

namespace spool_test {

// Returns once `done()` is true. `done` must read atomics that another thread sets; this is
// the tests' only way to wait for another thread besides join (no sleeps, no timeouts).
template <class Pred>
void spin_until(Pred&& done) {
  for (unsigned spins = 0; !done(); ++spins) {
    // Spin briefly for a fast hand-off, then yield: this machine has 2 cores and the thread
    // being waited for may need this one.
    if (spins >= 64) std::this_thread::yield();
  }
}

}  // namespace spool_test
