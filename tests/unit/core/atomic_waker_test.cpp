// spool::AtomicWaker: register / wake / take semantics, and the concurrent cases made
// deterministic by holding a thread inside register_waker (in the waker's clone).
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "spool/spool.hpp"
#include "support/counting_waker.hpp"
#include "support/sync.hpp"

namespace {

using spool::AtomicWaker;
using spool::Waker;
using spool_test::CountingWaker;
using spool_test::spin_until;

TEST(AtomicWaker, WakeBeforeAnyRegisterIsANoop) {
  AtomicWaker aw;
  aw.wake();  // nothing registered: nothing happens, and no wake-up is stored
  EXPECT_FALSE(aw.take().has_value());

  CountingWaker cw;
  aw.register_waker(cw.waker());
  // The earlier wake is not replayed on the later registration.
  EXPECT_EQ(cw.counts().total_wakes(), 0);
  // The waker is stored, waiting for the next wake.
  aw.wake();
  EXPECT_EQ(cw.counts().wakes, 1);
}

TEST(AtomicWaker, RegisterThenWakeWakesThatWakerExactlyOnce) {
  CountingWaker cw;
  {
    AtomicWaker aw;
    Waker w = cw.waker();
    aw.register_waker(w);
    EXPECT_EQ(cw.counts().clones, 2);  // w, and the stored clone
    EXPECT_EQ(cw.counts().total_wakes(), 0);
    aw.wake();
    EXPECT_EQ(cw.counts().total_wakes(), 1);
    EXPECT_EQ(cw.counts().wakes, 1);  // the stored clone was consumed by wake()
    aw.wake();                        // the slot is empty now
    aw.wake();
    EXPECT_EQ(cw.counts().total_wakes(), 1);
    EXPECT_FALSE(aw.take().has_value());
  }
  EXPECT_EQ(cw.counts().live(), 0);
}

TEST(AtomicWaker, RegisterAfterAWakeArmsItAgain) {
  CountingWaker cw;
  AtomicWaker aw;
  const Waker w = cw.waker();
  for (int i = 1; i <= 3; ++i) {
    aw.register_waker(w);
    aw.wake();
    EXPECT_EQ(cw.counts().wakes, i);
  }
}

TEST(AtomicWaker, ASecondRegisterReplacesTheFirst) {
  CountingWaker first;
  CountingWaker second;
  AtomicWaker aw;
  {
    Waker w1 = first.waker();
    Waker w2 = second.waker();
    aw.register_waker(w1);
    aw.register_waker(w2);
    // The first stored clone was dropped when the second replaced it.
    EXPECT_EQ(first.counts().clones, 2);
    EXPECT_EQ(first.counts().drops, 1);
    std::optional<Waker> stored = aw.take();
    ASSERT_TRUE(stored.has_value());
    EXPECT_TRUE(stored->will_wake(w2));
    EXPECT_FALSE(stored->will_wake(w1));
    aw.register_waker(*stored);
  }
  aw.wake();
  EXPECT_EQ(second.counts().total_wakes(), 1);
  EXPECT_EQ(first.counts().total_wakes(), 0);  // only the second is woken
  EXPECT_EQ(first.counts().live(), 0);
  EXPECT_EQ(second.counts().live(), 0);
}

TEST(AtomicWaker, RegisteringTheSameTasksWakerAgainDoesNotCloneAgain) {
  CountingWaker cw;
  AtomicWaker aw;
  Waker w = cw.waker();
  Waker other_handle = cw.waker();  // another handle to the same task: will_wake-equal
  ASSERT_TRUE(w.will_wake(other_handle));
  ASSERT_EQ(cw.counts().clones, 2);

  aw.register_waker(w);
  EXPECT_EQ(cw.counts().clones, 3);  // one clone stored
  aw.register_waker(w);
  aw.register_waker(other_handle);
  aw.register_waker(w);
  EXPECT_EQ(cw.counts().clones, 3);  // no further clone...
  EXPECT_EQ(cw.counts().drops, 0);   // ...and the stored one was not replaced

  std::optional<Waker> stored = aw.take();
  ASSERT_TRUE(stored.has_value());
  EXPECT_TRUE(stored->will_wake(w));
  EXPECT_EQ(cw.counts().clones, 3);  // take() moves the stored handle out
}

TEST(AtomicWaker, TakeHandsOutTheWakerAndEmptiesTheSlot) {
  CountingWaker cw;
  AtomicWaker aw;
  EXPECT_FALSE(aw.take().has_value());  // empty at first

  aw.register_waker(cw.waker());
  std::optional<Waker> taken = aw.take();
  ASSERT_TRUE(taken.has_value());
  EXPECT_TRUE(taken->will_wake(cw.waker()));
  EXPECT_EQ(cw.counts().total_wakes(), 0);  // take does not wake

  EXPECT_FALSE(aw.take().has_value());  // the slot is now empty...
  aw.wake();                            // ...so wake() finds nothing
  EXPECT_EQ(cw.counts().total_wakes(), 0);

  std::move(*taken).wake();  // the caller owns the handle it took
  EXPECT_EQ(cw.counts().wakes, 1);
}

TEST(AtomicWaker, DestroyingItDropsTheStoredWaker) {
  CountingWaker cw;
  {
    AtomicWaker aw;
    aw.register_waker(cw.waker());
    EXPECT_EQ(cw.counts().live(), 1);
  }
  EXPECT_EQ(cw.counts().live(), 0);
  EXPECT_EQ(cw.counts().total_wakes(), 0);
}

TEST(AtomicWaker, IsUsableFromAnotherThreadAfterRegister) {
  CountingWaker cw;
  AtomicWaker aw;
  aw.register_waker(cw.waker());
  std::thread t([&] { aw.wake(); });
  t.join();
  EXPECT_EQ(cw.counts().wakes, 1);
  EXPECT_EQ(cw.counts().live(), 0);
}

// Holds the first thread that clones `cw` (after arm()) inside the clone until release():
// register_waker clones while it holds the AtomicWaker's slot, so this keeps a
// registration in progress for as long as the test needs.
class CloneGate {
 public:
  explicit CloneGate(CountingWaker& cw) {
    cw.set_on_clone([this] {
      if (!armed_.exchange(false)) return;
      inside_.store(true);
      spin_until([this] { return released_.load(); });
    });
  }
  void arm() { armed_.store(true); }
  void wait_until_inside() {
    spin_until([this] { return inside_.load(); });
  }
  void release() { released_.store(true); }

 private:
  std::atomic<bool> armed_{false};
  std::atomic<bool> inside_{false};
  std::atomic<bool> released_{false};
};

TEST(AtomicWaker, WakeDuringARegistrationIsDeliveredByTheRegisteringSide) {
  CountingWaker cw;
  Waker w = cw.waker();
  CloneGate gate(cw);
  AtomicWaker aw;

  gate.arm();
  std::thread registering([&] { aw.register_waker(w); });
  gate.wait_until_inside();  // register_waker holds the slot now
  aw.wake();                 // cannot take the waker: must not lose the wake-up
  EXPECT_EQ(cw.counts().total_wakes(), 0);
  gate.release();
  registering.join();

  // The registration saw the concurrent wake and woke its own waker.
  EXPECT_EQ(cw.counts().total_wakes(), 1);
  EXPECT_FALSE(aw.take().has_value());  // and it left the slot empty
}

TEST(AtomicWaker, TakeDuringARegistrationReturnsNothingAndTheRegistrationWakesItself) {
  CountingWaker cw;
  Waker w = cw.waker();
  CloneGate gate(cw);
  AtomicWaker aw;

  gate.arm();
  std::thread registering([&] { aw.register_waker(w); });
  gate.wait_until_inside();
  EXPECT_FALSE(aw.take().has_value());
  gate.release();
  registering.join();
  EXPECT_EQ(cw.counts().total_wakes(), 1);
}

TEST(AtomicWaker, ConcurrentRegisterFromTwoThreadsThrowsLogicError) {
  CountingWaker first;
  CountingWaker second;
  Waker w1 = first.waker();
  Waker w2 = second.waker();
  CloneGate gate(first);
  AtomicWaker aw;

  gate.arm();
  std::thread registering([&] { aw.register_waker(w1); });
  gate.wait_until_inside();  // the first registration holds the slot
  try {
    aw.register_waker(w2);
    ADD_FAILURE() << "a concurrent register_waker did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("concurrently"), std::string::npos) << e.what();
  }
  EXPECT_EQ(second.counts().clones, 1);  // the refused waker was not stored
  gate.release();
  registering.join();

  // The first registration completed normally and is the one woken.
  aw.wake();
  EXPECT_EQ(first.counts().wakes, 1);
  EXPECT_EQ(second.counts().total_wakes(), 0);
  // And the AtomicWaker works normally afterwards.
  aw.register_waker(w2);
  aw.wake();
  EXPECT_EQ(second.counts().wakes, 1);
}

TEST(AtomicWaker, AWakerWhoseCloneThrowsLeavesTheSlotUsable) {
  // register_waker clones while it holds the slot; a clone that throws (a Waker's copy
  // may throw, e.g. when it allocates) must not leave the slot locked forever.
  CountingWaker first;
  CountingWaker throwing;
  CountingWaker later;
  AtomicWaker aw;
  aw.register_waker(first.waker());
  Waker bad = throwing.waker();
  throwing.set_on_clone([] { throw std::runtime_error("clone failed"); });

  EXPECT_THROW(aw.register_waker(bad), std::runtime_error);
  // The previous registration is still there...
  std::optional<Waker> stored = aw.take();
  ASSERT_TRUE(stored.has_value());
  EXPECT_TRUE(stored->will_wake(first.waker()));
  stored.reset();
  // ...and the slot works as before: registering and waking are not refused.
  aw.register_waker(later.waker());
  aw.wake();
  EXPECT_EQ(later.counts().wakes, 1);
  EXPECT_EQ(first.counts().total_wakes(), 0);
  EXPECT_EQ(first.counts().live(), 0);
}

TEST(AtomicWaker, AWakeDuringARegistrationWhoseCloneThrowsGoesToTheWakerThatStays) {
  CountingWaker first;
  CountingWaker throwing;
  AtomicWaker aw;
  aw.register_waker(first.waker());
  Waker bad = throwing.waker();
  std::atomic<bool> inside{false};
  std::atomic<bool> released{false};
  throwing.set_on_clone([&] {
    inside.store(true);
    spin_until([&] { return released.load(); });
    throw std::runtime_error("clone failed");
  });

  std::thread registering([&] { EXPECT_THROW(aw.register_waker(bad), std::runtime_error); });
  spin_until([&] { return inside.load(); });  // the registration holds the slot
  aw.wake();                                  // cannot take the waker now
  EXPECT_EQ(first.counts().total_wakes(), 0);
  released.store(true);
  registering.join();

  // The failed registration unlocked the slot and delivered the wake to the waker that
  // stayed registered.
  EXPECT_EQ(first.counts().wakes, 1);
  EXPECT_FALSE(aw.take().has_value());
  EXPECT_EQ(throwing.counts().clones, 1);  // only `bad` itself
}

}  // namespace
