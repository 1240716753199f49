// The classic lost wake-up: a leaf is polled by one executor, abandoned while pending (with
// that executor's waker stored), and then finished by another executor. A correct leaf
// stores the latest waker on every poll; one that keeps its first waker hangs the second.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>

#include "spool/spool.hpp"
#include "support/futures.hpp"
#include "support/select.hpp"
#include "support/sync.hpp"

namespace {

using spool::Context;
using spool::Poll;
using spool::Waker;
using spool_test::select;
using spool_test::Signal;
using spool_test::spin_until;
using spool_test::YieldNow;

// Polls `inner` in place, keeping a clone of the waker of its latest poll.
template <class F>
class RecordWaker {
 public:
  explicit RecordWaker(F& inner) : inner_(inner) {}
  auto poll(Context& cx) {
    waker_ = cx.waker();
    return inner_.poll(cx);
  }
  const std::optional<Waker>& waker() const { return waker_; }

 private:
  F& inner_;
  std::optional<Waker> waker_;
};

// Polls `inner` exactly once, expects it to be pending, and finishes, so that the executor
// returns whatever the leaf did (a test can then inspect the leaf without hanging).
template <class F>
class PollOnce {
 public:
  explicit PollOnce(F& inner) : inner_(inner) {}
  Poll<void> poll(Context& cx) {
    waker_ = cx.waker();
    EXPECT_TRUE(inner_.poll(cx).is_pending());
    return Poll<void>::ready();
  }
  const std::optional<Waker>& waker() const { return waker_; }

 private:
  F& inner_;
  std::optional<Waker> waker_;
};

// DELIBERATELY BROKEN: stores the waker of its first poll only and ignores later ones.
class FirstWakerOnlySignal {
 public:
  Poll<void> poll(Context& cx) {
    std::lock_guard lock(mutex_);
    if (!waker_) waker_ = cx.waker();  // the bug: later polls' wakers are dropped
    if (fired_) return Poll<void>::ready();
    return spool::pending;
  }
  void fire() {
    std::optional<Waker> w;
    {
      std::lock_guard lock(mutex_);
      fired_ = true;
      w = std::move(waker_);
    }
    if (w) std::move(*w).wake();
  }
  bool stored_will_wake(const Waker& other) {
    std::lock_guard lock(mutex_);
    return waker_ && waker_->will_wake(other);
  }

 private:
  std::mutex mutex_;
  std::optional<Waker> waker_;
  bool fired_ = false;
};

// Phase 1: block_on #1 polls `leaf` through select(leaf, other) and finishes on `other`
// (which yields once, so the leaf is polled twice); the leaf is left pending. Returns a
// clone of block_on #1's waker.
template <class Leaf>
Waker abandon_in_a_select(Leaf& leaf) {
  RecordWaker<Leaf> recorded(leaf);
  YieldNow other(1);
  auto winner = spool::block_on(select(recorded, other));
  EXPECT_EQ(winner.index(), 1u);  // finished on its other branch
  return *recorded.waker();
}

// Phase 2: block_on #2, on another thread, polls the abandoned leaf once. Returns a clone
// of block_on #2's waker.
template <class Leaf>
Waker poll_once_on_another_thread(Leaf& leaf) {
  std::optional<Waker> second;
  std::thread t([&] {
    PollOnce<Leaf> once(leaf);
    spool::block_on(once);
    second = *once.waker();
  });
  t.join();
  return *second;
}

TEST(LostWakeup, ALeafAbandonedByOneBlockOnIsFinishedByAnotherOnAnotherThread) {
  Signal signal;
  Signal::Future leaf = signal.future();

  // Phase 1: polled twice by block_on #1 (through select), abandoned pending.
  abandon_in_a_select(leaf);
  ASSERT_EQ(signal.polls(), 2);
  ASSERT_FALSE(signal.fired());

  // Phase 2: block_on #2 on another thread finishes the same leaf object. A third thread
  // fires the signal only after block_on #2's first poll completed (that poll registered
  // block_on #2's waker and found the signal not fired), so only that waker can end it.
  // Written by the `second` thread after its block_on returns (seq_cst store); read by the test
  // (seq_cst load) after second.join(), which orders the store (relaxed would suffice).
  std::atomic<bool> finished{false};
  std::thread second([&] {
    spool::block_on(leaf);
    finished.store(true);
  });
  std::thread firer([&] {
    spin_until([&] { return signal.polls() >= 3; });
    signal.fire();
  });
  firer.join();
  second.join();
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(signal.polls(), 4);  // one pending and one ready poll by block_on #2
}

TEST(LostWakeup, ACorrectLeafHoldsTheLatestWakerAfterTheSecondPoll) {
  Signal signal;
  Signal::Future leaf = signal.future();
  Waker first = abandon_in_a_select(leaf);
  EXPECT_TRUE(signal.registered_will_wake(first));

  Waker second = poll_once_on_another_thread(leaf);
  ASSERT_FALSE(second.will_wake(first));  // two block_ons: two different wakers
  EXPECT_TRUE(signal.registered_will_wake(second));
  EXPECT_FALSE(signal.registered_will_wake(first));
}

TEST(LostWakeup, ABrokenLeafThatKeepsItsFirstWakerWouldHangTheSecondBlockOn) {
  // Not run to the hang: after block_on #2's poll the stored waker is still block_on #1's,
  // so a fire would wake an executor that has already finished, and block_on #2 would park
  // forever.
  FirstWakerOnlySignal leaf;
  Waker first = abandon_in_a_select(leaf);
  EXPECT_TRUE(leaf.stored_will_wake(first));

  Waker second = poll_once_on_another_thread(leaf);
  ASSERT_FALSE(second.will_wake(first));
  EXPECT_FALSE(leaf.stored_will_wake(second));  // block_on #2 could never be woken
  EXPECT_TRUE(leaf.stored_will_wake(first));
}

}  // namespace
