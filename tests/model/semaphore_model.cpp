// Model of spool::Semaphore's state word (include/spool/sync/semaphore.hpp,
// src/sync/semaphore.cpp): the lock-free fast paths (try_take's and release's CAS) against
// the waiter path under the lock (enqueue, release_slow / assign_locked, kWaiters).
//
// One permit to start with. Thread 0 acquires 2 (the future takes the one there, sets
// kWaiters and waits for the second), thread 1 takes 1 lock-free if it can (try_acquire),
// writes the shared data and releases it, thread 2 adds 1 permit (add_permits).
//
// Invariants:
//  - no permit duplicated: the permits held never exceed those created so far, and the
//    data, written by thread 0 with both permits and by thread 1 with one, is never
//    written by both without a happens-before edge (Relacy reports a data race);
//  - no lost wake-up: thread 0, parked on its pending acquire, is woken (park_until_woken)
//    and gets its 2 permits;
//  - no permit lost: once everything is released, 2 permits are available and kWaiters
//    is clear.
#include <optional>

#include "model/sync_model.hpp"
#include "spool/sync/semaphore.hpp"

namespace {

using spool::model::Pool;
using spool::model::Task;

struct SemaphoreModel : rl::test_suite<SemaphoreModel, 3> {
  Pool pool;
  Task waiter;
  std::optional<spool::Semaphore> sem;
  // Permits created so far (thread 2 adds 1 before add_permits) and held now; relaxed: the
  // checks only compare counts, each RMW reads the latest value.
  spool::detail::Atomic<int> created{1};
  spool::detail::Atomic<int> held{0};
  // Threads 1 and 2 done (each adds 1, release, after its last step): see park_until_woken.
  spool::detail::Atomic<int> done{0};
  rl::var<int> data;  // written only while holding permits that exclude the other writer

  void before() {
    sem.emplace(1);
    data($) = 0;
  }

  // Holding `n` permits: counts them, checks the count, writes the data.
  void hold(int n) {
    const int now = held.fetch_add(n, std::memory_order_relaxed) + n;
    RL_ASSERT(now <= created.fetch_add(0, std::memory_order_relaxed));  // none duplicated
    data($) = n;
    held.fetch_sub(n, std::memory_order_relaxed);
  }

  void thread(unsigned index) {
    if (index == 0) {
      spool::Waker w = spool::Waker::from_raw(pool.make(waiter));
      spool::Context cx(w);
      spool::SemaphoreAcquire acquire = sem->acquire(2);
      for (;;) {
        const int seen = waiter.wakes.load(std::memory_order_relaxed);  // before the poll
        spool::Poll<spool::SemaphorePermit> p = acquire.poll(cx);
        if (p.is_ready()) {
          RL_ASSERT(p.value().num_permits() == 2);
          hold(2);
          break;  // the permit is released here
        }
        spool::model::park_until_woken(waiter, seen, done, 2);
      }
    } else {
      if (index == 1) {
        if (std::optional<spool::SemaphorePermit> p = sem->try_acquire(1)) hold(1);
      } else {
        created.fetch_add(1, std::memory_order_relaxed);
        sem->add_permits(1);
      }
      // Release: see `done`.
      done.fetch_add(1, std::memory_order_release);
    }
  }

  void after() {
    RL_ASSERT(sem->available_permits() == 2);  // none lost (and so kWaiters is clear)
    RL_ASSERT(sem->try_acquire(2).has_value());
    sem.reset();
    RL_ASSERT(waiter.refs.load(std::memory_order_relaxed) == 0);
  }
};

}  // namespace

int main() { return spool::model::run_model<SemaphoreModel>("semaphore", 200000); }
