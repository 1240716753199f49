// spool::Waker: clone/drop balance, will_wake, wake vs wake_by_ref, noop, Waker::from.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/counting_waker.hpp"

namespace {

using spool::Waker;
using spool_test::CountingWaker;

TEST(Waker, CopiesMovesAndAssignmentsKeepClonesAndDropsBalanced) {
  CountingWaker cw;
  const auto& n = cw.counts();
  {
    Waker a = cw.waker();  // clone 1
    EXPECT_EQ(n.clones, 1);
    Waker b = a;  // copy: clone 2
    EXPECT_EQ(n.clones, 2);
    EXPECT_EQ(n.live(), 2);
    Waker c = std::move(b);  // move: takes b's reference, no clone, no drop
    EXPECT_EQ(n.clones, 2);
    EXPECT_EQ(n.drops, 0);
    Waker d;  // noop
    d = c;    // copy-assign over a noop: clone 3, the noop is dropped (not counted)
    EXPECT_EQ(n.clones, 3);
    Waker e;
    e = std::move(d);  // move-assign: no clone, no drop
    EXPECT_EQ(n.clones, 3);
    EXPECT_EQ(n.drops, 0);
    e = Waker::noop();  // assigning a noop over e drops e's reference
    EXPECT_EQ(n.drops, 1);
    EXPECT_EQ(n.live(), 2);  // a and c
    Waker& alias = a;        // (through an alias, so the compilers do not warn)
    a = alias;               // self copy-assignment: nothing happens
    a = std::move(alias);    // self move-assignment: nothing happens
    EXPECT_TRUE(a.will_wake(c));
    EXPECT_EQ(n.clones, 3);
    EXPECT_EQ(n.drops, 1);
    std::vector<Waker> many(10, c);  // ten clones
    EXPECT_EQ(n.clones, 13);
    EXPECT_EQ(n.live(), 12);
  }
  EXPECT_EQ(n.wakes, 0);
  EXPECT_EQ(n.clones, n.drops);
  EXPECT_EQ(n.live(), 0);
}

TEST(Waker, CopyAssignOfAWakerThatWakesTheSameTaskDoesNotClone) {
  CountingWaker cw;
  Waker a = cw.waker();
  Waker b = cw.waker();
  ASSERT_EQ(cw.counts().clones, 2);
  a = b;  // same data and vtable: keeps a's reference, clones nothing, drops nothing
  EXPECT_EQ(cw.counts().clones, 2);
  EXPECT_EQ(cw.counts().drops, 0);
  EXPECT_TRUE(a.will_wake(b));
}

TEST(Waker, AssignmentReplacesAWakerOfAnotherTask) {
  CountingWaker first;
  CountingWaker second;
  {
    Waker w = first.waker();
    Waker other = second.waker();
    w = other;  // drops first's handle, clones second's
    EXPECT_EQ(first.counts().drops, 1);
    EXPECT_EQ(first.counts().live(), 0);
    EXPECT_EQ(second.counts().clones, 2);
    EXPECT_TRUE(w.will_wake(other));
    Waker third = first.waker();
    w = std::move(third);  // drops second's handle, takes first's
    EXPECT_EQ(second.counts().drops, 1);
    EXPECT_TRUE(third.will_wake(Waker::noop()));  // moved-from is the noop waker
    w.wake_by_ref();
    EXPECT_EQ(first.counts().wakes_by_ref, 1);
    EXPECT_EQ(second.counts().total_wakes(), 0);
  }
  EXPECT_EQ(first.counts().live(), 0);
  EXPECT_EQ(second.counts().live(), 0);
}

TEST(Waker, MovedFromWakerIsTheNoopWaker) {
  CountingWaker cw;
  Waker a = cw.waker();
  Waker b = std::move(a);
  EXPECT_TRUE(a.will_wake(Waker::noop()));  // NOLINT(bugprone-use-after-move)
  a.wake_by_ref();                          // does nothing
  std::move(a).wake();                      // does nothing
  EXPECT_EQ(cw.counts().total_wakes(), 0);
  EXPECT_EQ(cw.counts().live(), 1);  // b only
}

TEST(Waker, WillWakeIsTrueForClonesAndFalseForOtherData) {
  CountingWaker cw;
  CountingWaker other;
  Waker a = cw.waker();
  Waker b = a;
  Waker c = cw.waker();
  Waker d = other.waker();
  EXPECT_TRUE(a.will_wake(a));
  EXPECT_TRUE(a.will_wake(b));
  EXPECT_TRUE(b.will_wake(a));
  EXPECT_TRUE(a.will_wake(c));
  EXPECT_FALSE(a.will_wake(d));
  EXPECT_FALSE(d.will_wake(a));
  EXPECT_FALSE(a.will_wake(Waker::noop()));
  EXPECT_EQ(a.as_raw().data, b.as_raw().data);
  EXPECT_NE(a.as_raw().data, d.as_raw().data);
}

TEST(Waker, WakeConsumesTheHandle) {
  CountingWaker cw;
  const auto& n = cw.counts();
  {
    Waker w = cw.waker();
    std::move(w).wake();
    EXPECT_EQ(n.wakes, 1);
    EXPECT_EQ(n.wakes_by_ref, 0);
    EXPECT_EQ(n.drops, 0);  // wake released the reference itself: no extra drop
    EXPECT_EQ(n.live(), 0);
    EXPECT_TRUE(w.will_wake(Waker::noop()));  // NOLINT(bugprone-use-after-move)
    std::move(w).wake();                      // a second wake of the husk does nothing
    EXPECT_EQ(n.wakes, 1);
  }
  // Destroying the consumed handle did not drop again.
  EXPECT_EQ(n.drops, 0);
  EXPECT_EQ(n.clones, n.drops + n.wakes);
}

TEST(Waker, WakeByRefLeavesTheHandleValid) {
  CountingWaker cw;
  const auto& n = cw.counts();
  {
    Waker w = cw.waker();
    Waker same = w;
    w.wake_by_ref();
    w.wake_by_ref();
    EXPECT_EQ(n.wakes_by_ref, 2);
    EXPECT_EQ(n.wakes, 0);
    EXPECT_EQ(n.drops, 0);
    EXPECT_EQ(n.live(), 2);
    EXPECT_TRUE(w.will_wake(same));  // still the same task
    Waker copy = w;                  // and still clonable
    EXPECT_EQ(n.clones, 3);
    std::move(w).wake();
    EXPECT_EQ(n.wakes, 1);
  }
  EXPECT_EQ(n.clones, n.drops + n.wakes);
  EXPECT_EQ(n.drops, 2);
}

TEST(Waker, NoopWakerDoesNothingAndItsClonesAreEqual) {
  Waker noop = Waker::noop();
  Waker defaulted;
  Waker clone = noop;
  EXPECT_TRUE(noop.will_wake(clone));
  EXPECT_TRUE(clone.will_wake(noop));
  EXPECT_TRUE(defaulted.will_wake(noop));
  EXPECT_TRUE(Waker::noop().will_wake(Waker::noop()));
  EXPECT_EQ(noop.as_raw().data, nullptr);
  noop.wake_by_ref();
  std::move(clone).wake();
  EXPECT_TRUE(noop.will_wake(Waker::noop()));
  CountingWaker cw;
  EXPECT_FALSE(noop.will_wake(cw.waker()));
}

// A wake target for Waker::from: counts its wakes and reports its destruction.
struct Target {
  explicit Target(std::atomic<bool>* destroyed) : destroyed(destroyed) {}
  ~Target() { destroyed->store(true); }
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;
  void wake() { wakes.fetch_add(1); }
  std::atomic<int> wakes{0};
  std::atomic<bool>* destroyed;
};

TEST(Waker, FromSharedPtrCallsWakeAndKeepsTheTargetAliveWhileClonesExist) {
  std::atomic<bool> destroyed{false};
  auto target = std::make_shared<Target>(&destroyed);
  Target* raw = target.get();
  std::weak_ptr<Target> weak = target;

  std::optional<Waker> w = Waker::from(std::move(target));
  Waker clone = *w;
  EXPECT_TRUE(clone.will_wake(*w));
  EXPECT_EQ(raw->wakes, 0);

  w->wake_by_ref();
  EXPECT_EQ(raw->wakes, 1);
  w.reset();  // the first handle goes; the clone still keeps the target alive
  EXPECT_FALSE(destroyed);
  EXPECT_FALSE(weak.expired());

  Waker last = clone;
  clone.wake_by_ref();
  EXPECT_EQ(raw->wakes, 2);
  { Waker drop_me = std::move(clone); }
  EXPECT_FALSE(destroyed);

  std::move(last).wake();  // wakes, then releases the last reference
  EXPECT_TRUE(destroyed);
  EXPECT_TRUE(weak.expired());
}

TEST(Waker, FromSharedPtrIsNotEqualToAnotherTarget) {
  std::atomic<bool> d1{false};
  std::atomic<bool> d2{false};
  Waker a = Waker::from(std::make_shared<Target>(&d1));
  Waker b = Waker::from(std::make_shared<Target>(&d2));
  EXPECT_FALSE(a.will_wake(b));
  EXPECT_FALSE(a.will_wake(Waker::noop()));
}

TEST(Waker, HandlesMayBeClonedWokenAndDroppedOnManyThreads) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  CountingWaker cw;
  {
    Waker shared = cw.waker();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      Waker mine = shared;  // cloned here, moved to the thread
      threads.emplace_back([mine = std::move(mine)]() mutable {
        for (int i = 0; i < kPerThread; ++i) {
          Waker c = mine;  // clone
          c.wake_by_ref();
          if (i % 2 == 0) std::move(c).wake();  // else: dropped at the end of the scope
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  const auto& n = cw.counts();
  EXPECT_EQ(n.wakes_by_ref, kThreads * kPerThread);
  EXPECT_EQ(n.wakes, kThreads * kPerThread / 2);
  EXPECT_EQ(n.clones, 1 + kThreads + kThreads * kPerThread);
  EXPECT_EQ(n.live(), 0);
}

}  // namespace
