// AtomicWaker under real races: register_waker on one thread against wake() on one or two
// others, round after round, counting the rounds where the waiting side would have missed
// both the event and the wake-up (a lost wake-up). Meant to run under ThreadSanitizer too.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>

#include "spool/spool.hpp"
#include "support/counting_waker.hpp"
#include "support/sync.hpp"

namespace {

using spool::AtomicWaker;
using spool::Waker;
using spool_test::CountingWaker;
using spool_test::spin_until;

// The round protocol, for one waiting thread and kWakers waking threads:
//   waiter:  started = r; register_waker(w); saw = (event >= r); wait until every waker
//            finished round r; woken = (w's wake count grew during the round).
//   waker i: wait until started >= r; event = r; wake(); finished[i] = r.
// The waiter registers while the wakers fire (the race under test). Once both sides are
// done with the round, the atomic-waker guarantee says the waiter saw the event or its
// waker was woken (by wake(), or by register_waker itself when it met a concurrent wake).
// A round with neither is a lost wake-up: a real task would sleep forever.
// The waiter alternates between the wakers of two "tasks", so that each registration
// replaces the other task's stored waker while wakes run; a wake that reaches only the
// stale waker does not count as waking the waiter.
template <int kWakers>
int count_lost_wakeups(int rounds) {
  AtomicWaker aw;
  CountingWaker tasks[2];
  const Waker wakers[2] = {tasks[0].waker(), tasks[1].waker()};

  std::atomic<int> started{0};
  std::atomic<int> event{0};
  std::array<std::atomic<int>, kWakers> finished{};

  std::array<std::thread, kWakers> threads;
  for (int i = 0; i < kWakers; ++i) {
    threads[i] = std::thread([&, i] {
      for (int r = 1; r <= rounds; ++r) {
        spin_until([&] { return started.load(std::memory_order_acquire) >= r; });
        event.store(r, std::memory_order_release);
        aw.wake();
        finished[i].store(r, std::memory_order_release);
      }
    });
  }

  int lost = 0;
  for (int r = 1; r <= rounds; ++r) {
    // Every wake of earlier rounds has returned: the wakers finished them.
    const CountingWaker& task = tasks[r % 2];
    const int wakes_before = task.counts().total_wakes();
    started.store(r, std::memory_order_release);
    aw.register_waker(wakers[r % 2]);
    const bool saw_event = event.load(std::memory_order_acquire) >= r;
    for (auto& f : finished) {
      spin_until([&] { return f.load(std::memory_order_acquire) >= r; });
    }
    const bool woken = task.counts().total_wakes() > wakes_before;
    if (!saw_event && !woken) ++lost;
  }
  for (auto& t : threads) t.join();
  return lost;
}

TEST(AtomicWakerStress, RegisterRacingOneWakerNeverLosesAWakeup) {
  EXPECT_EQ(count_lost_wakeups<1>(60'000), 0);  // the Relacy model explores every order
}

TEST(AtomicWakerStress, RegisterRacingTwoWakersNeverLosesAWakeup) {
  EXPECT_EQ(count_lost_wakeups<2>(50'000), 0);
}

TEST(AtomicWakerStress, WakerHandlesStayBalancedUnderConcurrentRegisterAndTake) {
  // One thread keeps registering (alternating two tasks' wakers), another keeps taking
  // the stored waker and dropping or waking it. Every handle the slot cloned must be
  // released exactly once: afterwards no handle is left alive (and under ASan none leaked
  // or was freed twice).
  constexpr int kRounds = 200'000;
  CountingWaker task_a;
  CountingWaker task_b;
  {
    AtomicWaker aw;
    const Waker wakers[2] = {task_a.waker(), task_b.waker()};
    // Before the race, the slot certainly clones (no taker yet): the race then starts with
    // a stored handle that the taker or the final drop must release.
    aw.register_waker(wakers[0]);
    ASSERT_EQ(task_a.counts().clones, 2);  // the `wakers` handle and the slot's clone
    // Written by the main thread (release) after its last register; read by the taker
    // (acquire), which pairs with it to stop.
    std::atomic<bool> stop{false};
    std::thread taker([&] {
      for (unsigned i = 0; !stop.load(std::memory_order_acquire); ++i) {
        if (auto w = aw.take(); w && i % 2 == 0) std::move(*w).wake();
      }
    });
    for (int r = 0; r < kRounds; ++r) aw.register_waker(wakers[r % 2]);
    stop.store(true, std::memory_order_release);
    taker.join();
  }  // the AtomicWaker drops whatever it still holds
  // How often the registering side cloned during the race depends on scheduling (while
  // the taker holds WAKING, a register wakes its own waker instead of storing it), so only
  // the balance is asserted.
  EXPECT_EQ(task_a.counts().live(), 0);
  EXPECT_EQ(task_b.counts().live(), 0);
}

}  // namespace
