// spool::Mutex: guards, try_lock, FIFO hand-off (order recorded), cancellation of a waiting
// lock (the lock passes on), guard misuse and the address-stability rule, stepped by hand;
// then contended increments from tasks of both runtime flavours and from outside threads.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Mutex;
using spool::MutexGuard;
using spool::MutexLock;
using spool_test::HandPoller;

TEST(Mutex, LockGuardsTheValue) {
  Mutex<std::string> m("a");
  {
    MutexGuard<std::string> g = spool::block_on(m.lock());
    *g += "b";
    EXPECT_EQ(g->size(), 2u);
    EXPECT_FALSE(m.try_lock().has_value());  // held
  }
  std::optional<MutexGuard<std::string>> g = m.try_lock();
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(**g, "ab");
}

TEST(Mutex, UnlockHandsTheLockToTheWaitersInFifoOrder) {
  constexpr int kWaiters = 5;
  Mutex<std::vector<int>> m;
  std::optional<MutexGuard<std::vector<int>>> held = m.try_lock();
  ASSERT_TRUE(held.has_value());
  std::vector<HandPoller> parties(kWaiters);
  std::vector<std::unique_ptr<MutexLock<std::vector<int>>>> locks;
  for (int i = 0; i < kWaiters; ++i) {
    locks.push_back(std::make_unique<MutexLock<std::vector<int>>>(m.lock()));
    EXPECT_TRUE(parties[i].poll(*locks[i]).is_pending());
  }
  held.reset();
  // Each unlock wakes exactly the next waiter, which then holds the lock; the last one to
  // wake re-locks behind nobody.
  for (int i = 0; i < kWaiters; ++i) {
    for (int j = 0; j < kWaiters; ++j) EXPECT_EQ(parties[j].wakes(), j <= i ? 1 : 0);
    EXPECT_FALSE(m.try_lock().has_value());  // handed off, never free in between
    auto p = parties[i].poll(*locks[i]);
    ASSERT_TRUE(p.is_ready());
    p.value()->push_back(i);
  }  // each guard unlocks at the end of its iteration
  std::optional<MutexGuard<std::vector<int>>> last = m.try_lock();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(**last, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Mutex, ALockerThatUnlocksAndLocksAgainQueuesBehindTheOthers) {
  Mutex<int> m(0);
  HandPoller a, b;
  std::optional<MutexGuard<int>> held = m.try_lock();
  MutexLock<int> b_lock = m.lock();
  EXPECT_TRUE(b.poll(b_lock).is_pending());
  held.reset();                               // handed to b
  MutexLock<int> a_again = m.lock();          // the old holder comes back at once
  EXPECT_TRUE(a.poll(a_again).is_pending());  // behind b
  EXPECT_TRUE(b.poll(b_lock).is_ready());     // b's guard dropped at once: a gets it
  EXPECT_EQ(a.wakes(), 1);
  EXPECT_TRUE(a.poll(a_again).is_ready());
}

TEST(Mutex, ACancelledWaiterLeavesTheQueue) {
  Mutex<int> m(0);
  HandPoller first, second;
  std::optional<MutexGuard<int>> held = m.try_lock();
  auto cancelled = std::make_unique<MutexLock<int>>(m.lock());
  MutexLock<int> next = m.lock();
  EXPECT_TRUE(first.poll(*cancelled).is_pending());
  EXPECT_TRUE(second.poll(next).is_pending());
  cancelled.reset();
  held.reset();
  EXPECT_EQ(first.wakes(), 0);
  EXPECT_EQ(second.wakes(), 1);
  EXPECT_TRUE(second.poll(next).is_ready());
}

TEST(Mutex, ALockHandedToADroppedWaiterPassesOn) {
  Mutex<int> m(0);
  HandPoller first, second;
  std::optional<MutexGuard<int>> held = m.try_lock();
  auto handed = std::make_unique<MutexLock<int>>(m.lock());
  MutexLock<int> next = m.lock();
  EXPECT_TRUE(first.poll(*handed).is_pending());
  EXPECT_TRUE(second.poll(next).is_pending());
  held.reset();  // the lock now belongs to `handed`...
  EXPECT_EQ(first.wakes(), 1);
  handed.reset();  // ...which is dropped before it saw it
  EXPECT_EQ(second.wakes(), 1);
  auto g = second.poll(next);
  ASSERT_TRUE(g.is_ready());
  *g.value() = 7;
  g = spool::pending;
  EXPECT_EQ(**m.try_lock(), 7);  // and it is free again afterwards
}

// Destroying the mutex while a guard or a waiting lock future is left would let their
// release write freed memory: the process aborts with a message instead.
TEST(MutexDeathTest, DestroyedWhileLockedOrAwaitedAbortsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto m = std::make_unique<Mutex<int>>(1);
        std::optional<MutexGuard<int>> g = m->try_lock();
        m.reset();
      },
      "spool::Mutex destroyed while it is locked or a lock");
  EXPECT_DEATH(
      {
        auto m = std::make_unique<Mutex<int>>(1);
        std::optional<MutexGuard<int>> g = m->try_lock();
        MutexLock<int> waiting = m->lock();
        HandPoller p;
        (void)p.poll(waiting);  // pending: queued behind the guard
        g.reset();              // the lock passes to `waiting`, which holds it now
        m.reset();
      },
      "spool::Mutex destroyed while it is locked");
  // Nothing left: destroyed quietly (a lock future never polled holds nothing).
  auto m = std::make_unique<Mutex<int>>(1);
  MutexLock<int> never_polled = m->lock();
  { MutexGuard<int> g = *m->try_lock(); }
  m.reset();
}

TEST(Mutex, GuardMisuseIsAClearError) {
  Mutex<int> m(1);
  MutexGuard<int> g = *m.try_lock();
  MutexGuard<int> moved = std::move(g);
  EXPECT_FALSE(m.try_lock().has_value());  // the moved-from guard did not unlock
  try {
    (void)*g;  // NOLINT(bugprone-use-after-move): the misuse under test
    ADD_FAILURE() << "dereferencing a moved-from guard did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "spool::MutexGuard: the guard already released its lock (unlocked, or moved from)");
  }
  moved.unlock();
  EXPECT_TRUE(m.try_lock().has_value());
  try {
    moved.unlock();
    ADD_FAILURE() << "unlocking twice did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "spool::MutexGuard::unlock: the guard already released its lock (unlocked, or "
              "moved from)");
  }
  EXPECT_THROW((void)moved.operator->(), std::logic_error);
}

TEST(Mutex, MovingAWaitingLockThrows) {
  Mutex<int> m(0);
  HandPoller party;
  std::optional<MutexGuard<int>> held = m.try_lock();
  MutexLock<int> fresh = m.lock();
  MutexLock<int> lock = std::move(fresh);  // not polled yet: fine
  EXPECT_TRUE(party.poll(lock).is_pending());
  EXPECT_THROW(MutexLock<int>{std::move(lock)}, std::logic_error);
  held.reset();
  EXPECT_TRUE(party.poll(lock).is_ready());
}

// --- on runtimes and threads ---

class MutexAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(MutexAnyFlavor);

spool::Task<void> increment(Mutex<long>* m, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    auto g = co_await m->lock();
    const long seen = *g;
    co_await spool::yield_now();  // hold it across a suspension: others must queue
    *g = seen + 1;
  }
}

TEST_P(MutexAnyFlavor, TasksAndAnOutsideThreadIncrement) {
  constexpr int kTasks = 4, kRounds = 500;
  auto rt = build();
  Mutex<long> m(0);
  std::vector<spool::JoinHandle<void>> tasks;
  for (int i = 0; i < kTasks; ++i) tasks.push_back(rt.spawn(increment(&m, kRounds)));
  std::thread outside([&m] {
    for (int i = 0; i < kRounds; ++i) ++*spool::block_on(m.lock());
  });
  for (auto& t : tasks) wait(rt, std::move(t));  // (current-thread: runs the tasks meanwhile)
  outside.join();
  EXPECT_EQ(*spool::block_on(m.lock()), long{kTasks + 1} * kRounds);
}

}  // namespace
