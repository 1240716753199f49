// spool::Semaphore: permits, FIFO hand-off (a large acquire is not overtaken), close,
// cancellation of a waiting acquire (nothing lost), misuse errors and the address-stability
// rule, stepped by hand; then acquires from tasks of both runtime flavours.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::AcquireError;
using spool::Semaphore;
using spool::SemaphoreAcquire;
using spool::SemaphorePermit;
using spool_test::HandPoller;

TEST(Semaphore, TryAcquireTakesAndThePermitGivesBack) {
  Semaphore s(3);
  std::optional<SemaphorePermit> p = s.try_acquire(2);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->num_permits(), 2u);
  EXPECT_EQ(s.available_permits(), 1u);
  EXPECT_FALSE(s.try_acquire(2).has_value());
  p.reset();
  EXPECT_EQ(s.available_permits(), 3u);
}

TEST(Semaphore, AcquireUnderBlockOn) {
  Semaphore s(2);
  SemaphorePermit p = spool::block_on(s.acquire(2));
  EXPECT_EQ(p.num_permits(), 2u);
  EXPECT_EQ(s.available_permits(), 0u);
  p.release();
  EXPECT_EQ(p.num_permits(), 0u);
  EXPECT_EQ(s.available_permits(), 2u);
}

TEST(Semaphore, AWaiterIsWokenOnceWhenItsPermitsArrive) {
  Semaphore s(1);
  HandPoller party;
  SemaphoreAcquire a = s.acquire(2);
  EXPECT_TRUE(party.poll(a).is_pending());
  EXPECT_EQ(s.available_permits(), 0u);  // the waiter took the one there was
  s.add_permits(1);
  EXPECT_EQ(party.wakes(), 1);
  spool::Poll<SemaphorePermit> p = party.poll(a);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value().num_permits(), 2u);
}

TEST(Semaphore, TheLatestWakerIsWoken) {
  Semaphore s(0);
  HandPoller first, second;
  SemaphoreAcquire a = s.acquire(1);
  EXPECT_TRUE(first.poll(a).is_pending());
  EXPECT_TRUE(second.poll(a).is_pending());  // polled again by another task's waker
  s.add_permits(1);
  EXPECT_EQ(first.wakes(), 0);
  EXPECT_EQ(second.wakes(), 1);
  EXPECT_TRUE(second.poll(a).is_ready());
}

TEST(Semaphore, ALargeAcquireIsNotOvertakenBySmallOnes) {
  Semaphore s(0);
  HandPoller big_party, small_party;
  SemaphoreAcquire big = s.acquire(3);
  SemaphoreAcquire small = s.acquire(1);
  EXPECT_TRUE(big_party.poll(big).is_pending());
  EXPECT_TRUE(small_party.poll(small).is_pending());

  s.add_permits(2);  // both go to the head, which still needs one more
  EXPECT_EQ(big_party.wakes(), 0);
  EXPECT_EQ(small_party.wakes(), 0);
  EXPECT_TRUE(small_party.poll(small).is_pending());
  EXPECT_FALSE(s.try_acquire(1).has_value());  // nor does a newcomer overtake
  EXPECT_EQ(s.available_permits(), 0u);

  s.add_permits(1);
  EXPECT_EQ(big_party.wakes(), 1);
  EXPECT_EQ(small_party.wakes(), 0);
  spool::Poll<SemaphorePermit> got = big_party.poll(big);
  ASSERT_TRUE(got.is_ready());
  EXPECT_TRUE(small_party.poll(small).is_pending());

  got = spool::pending;  // releases the 3: the small one gets 1
  EXPECT_EQ(small_party.wakes(), 1);
  spool::Poll<SemaphorePermit> small_got = small_party.poll(small);
  EXPECT_TRUE(small_got.is_ready());
  EXPECT_EQ(s.available_permits(), 2u);
}

TEST(Semaphore, ManyWaitersAreAllWokenAcrossWakeBatches) {
  constexpr std::size_t kWaiters = 100;  // more than one WakeList batch
  Semaphore s(0);
  HandPoller party;
  std::vector<std::unique_ptr<SemaphoreAcquire>> waiters;
  for (std::size_t i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::make_unique<SemaphoreAcquire>(s.acquire(1)));
    EXPECT_TRUE(party.poll(*waiters.back()).is_pending());
  }
  s.add_permits(kWaiters + 1);
  EXPECT_EQ(party.wakes(), static_cast<int>(kWaiters));
  std::vector<SemaphorePermit> held;
  for (auto& w : waiters) {
    spool::Poll<SemaphorePermit> p = party.poll(*w);
    ASSERT_TRUE(p.is_ready());
    held.push_back(std::move(p).value());
  }
  EXPECT_EQ(s.available_permits(), 1u);
  held.clear();
  EXPECT_EQ(s.available_permits(), kWaiters + 1);
}

// --- close ---

TEST(Semaphore, CloseFailsWaitersAndLaterAcquires) {
  Semaphore s(1);
  std::optional<SemaphorePermit> held = s.try_acquire(1);
  HandPoller party;
  SemaphoreAcquire waiting = s.acquire(1);
  EXPECT_TRUE(party.poll(waiting).is_pending());
  SemaphoreAcquire never_polled = s.acquire(1);

  s.close();
  EXPECT_TRUE(s.is_closed());
  EXPECT_EQ(party.wakes(), 1);
  EXPECT_THROW(party.poll(waiting), AcquireError);
  EXPECT_THROW(party.poll(never_polled), AcquireError);
  EXPECT_THROW((void)s.try_acquire(1), AcquireError);
  try {
    spool::block_on(s.acquire(1));
    ADD_FAILURE() << "acquire on a closed semaphore succeeded";
  } catch (const AcquireError& e) {
    EXPECT_EQ(std::string(e.what()), "spool::Semaphore: acquire on a closed semaphore");
  }
  held.reset();  // a permit held across close is still returned
  EXPECT_EQ(s.available_permits(), 1u);
}

TEST(Semaphore, CloseGivesBackWhatAWaiterHadCollected) {
  Semaphore s(2);
  HandPoller party;
  SemaphoreAcquire a = s.acquire(5);
  EXPECT_TRUE(party.poll(a).is_pending());
  EXPECT_EQ(s.available_permits(), 0u);
  s.close();
  EXPECT_EQ(s.available_permits(), 2u);
  EXPECT_THROW(party.poll(a), AcquireError);
}

// spool's internal acquire for primitives that read "closed" as an answer (OnceCell): an
// empty permit instead of AcquireError, whether closed before the first poll or while waiting.
TEST(Semaphore, TheInternalAcquireGivesAnEmptyPermitWhenClosed) {
  Semaphore s(1);
  HandPoller party;
  SemaphoreAcquire granted = spool::detail::acquire_one_or_empty_when_closed(s);
  SemaphoreAcquire waiting = spool::detail::acquire_one_or_empty_when_closed(s);
  SemaphoreAcquire never_polled = spool::detail::acquire_one_or_empty_when_closed(s);
  auto g = party.poll(granted);
  ASSERT_TRUE(g.is_ready());
  EXPECT_EQ(g.value().num_permits(), 1u);
  EXPECT_TRUE(party.poll(waiting).is_pending());
  s.close();
  auto w = party.poll(waiting);
  ASSERT_TRUE(w.is_ready());
  EXPECT_EQ(w.value().num_permits(), 0u);
  auto n = party.poll(never_polled);
  ASSERT_TRUE(n.is_ready());
  EXPECT_EQ(n.value().num_permits(), 0u);
  EXPECT_THROW(party.poll(waiting), std::logic_error) << "polled after it completed";
}

// --- cancellation ---

TEST(Semaphore, ACancelledWaiterPassesItsCollectedPermitsOn) {
  Semaphore s(2);
  HandPoller big_party, small_party;
  auto big = std::make_unique<SemaphoreAcquire>(s.acquire(3));
  SemaphoreAcquire small = s.acquire(1);
  EXPECT_TRUE(big_party.poll(*big).is_pending());  // collected 2 of 3
  EXPECT_TRUE(small_party.poll(small).is_pending());
  big.reset();  // cancelled
  EXPECT_EQ(small_party.wakes(), 1);
  spool::Poll<SemaphorePermit> got = small_party.poll(small);
  EXPECT_TRUE(got.is_ready());
  EXPECT_EQ(s.available_permits(), 1u);
}

TEST(Semaphore, AGrantedButDroppedAcquirePassesThePermitsOn) {
  Semaphore s(0);
  HandPoller first_party, second_party;
  auto first = std::make_unique<SemaphoreAcquire>(s.acquire(2));
  SemaphoreAcquire second = s.acquire(1);
  EXPECT_TRUE(first_party.poll(*first).is_pending());
  EXPECT_TRUE(second_party.poll(second).is_pending());
  s.add_permits(2);  // granted to `first`, which is then dropped before its next poll
  EXPECT_EQ(first_party.wakes(), 1);
  first.reset();
  EXPECT_EQ(second_party.wakes(), 1);
  spool::Poll<SemaphorePermit> got = second_party.poll(second);
  EXPECT_TRUE(got.is_ready());
  EXPECT_EQ(s.available_permits(), 1u);
}

TEST(Semaphore, TheLastCancelledWaiterLeavesTheSemaphoreUsable) {
  Semaphore s(0);
  HandPoller party;
  {
    SemaphoreAcquire a = s.acquire(1);
    EXPECT_TRUE(party.poll(a).is_pending());
  }
  s.add_permits(1);  // the lock-free path again: nobody waits
  EXPECT_EQ(s.available_permits(), 1u);
  EXPECT_TRUE(s.try_acquire(1).has_value());
}

// --- permits ---

TEST(Semaphore, ForgetAndMovedFromPermits) {
  Semaphore s(3);
  SemaphorePermit a = std::move(*s.try_acquire(2));
  SemaphorePermit b = std::move(a);
  EXPECT_EQ(a.num_permits(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state
  a.release();                     // a no-op
  EXPECT_EQ(s.available_permits(), 1u);
  b.forget();
  b.release();
  EXPECT_EQ(s.available_permits(), 1u);  // the two forgotten permits are gone
}

// --- misuse ---

TEST(Semaphore, ZeroPermitsAreReadyAtOnceUnlessClosed) {
  Semaphore s(0);
  HandPoller party;
  SemaphoreAcquire a = s.acquire(0);
  spool::Poll<SemaphorePermit> p = party.poll(a);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value().num_permits(), 0u);
  EXPECT_TRUE(s.try_acquire(0).has_value());
  s.close();
  EXPECT_THROW((void)s.try_acquire(0), AcquireError);
}

TEST(Semaphore, TooManyPermitsAreAClearError) {
  const std::size_t too_many = Semaphore::max_permits + 1;
  EXPECT_THROW(Semaphore{too_many}, std::invalid_argument);
  Semaphore s(Semaphore::max_permits);
  try {
    (void)s.acquire(too_many);
    ADD_FAILURE() << "acquire(max_permits + 1) did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("more permits than spool::Semaphore::max_permits"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)s.try_acquire(too_many), std::invalid_argument);
  EXPECT_THROW(s.add_permits(1), std::overflow_error);
}

// Permits held while add_permits fills the semaphore up come back onto max_permits: the
// count stays there (it neither passes max_permits nor wraps), and add_permits still refuses;
// on the lock-free path (a permit released) and on the locked one (a granted acquire dropped
// unpolled gives its permits back under the lock).
TEST(Semaphore, PermitsReleasedOntoMaxPermitsAreDropped) {
  constexpr std::size_t kMax = Semaphore::max_permits;
  Semaphore s(kMax);
  std::optional<SemaphorePermit> held = s.try_acquire(kMax);
  ASSERT_TRUE(held.has_value());
  s.add_permits(kMax);
  held.reset();
  EXPECT_EQ(s.available_permits(), kMax);
  EXPECT_THROW(s.add_permits(kMax), std::overflow_error);
  EXPECT_THROW(s.add_permits(1), std::overflow_error);

  Semaphore t(0);
  HandPoller party;
  std::optional<SemaphoreAcquire> granted(t.acquire(kMax));
  EXPECT_TRUE(party.poll(*granted).is_pending());
  t.add_permits(kMax);  // all to the waiter, which is not polled again
  t.add_permits(kMax);  // nothing was available
  granted.reset();      // gives back kMax onto kMax
  EXPECT_EQ(t.available_permits(), kMax);
  EXPECT_THROW(t.add_permits(1), std::overflow_error);
}

TEST(Semaphore, PollingAfterCompletionIsAClearError) {
  Semaphore s(1);
  HandPoller party;
  SemaphoreAcquire a = s.acquire(1);
  spool::Poll<SemaphorePermit> p = party.poll(a);
  ASSERT_TRUE(p.is_ready());
  try {
    party.poll(a);
    ADD_FAILURE() << "a second poll after ready did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("polled after it completed"), std::string::npos);
  }
}

TEST(Semaphore, MovingAWaitingAcquireThrows) {
  Semaphore s(0);
  HandPoller party;
  SemaphoreAcquire fresh = s.acquire(1);
  SemaphoreAcquire moved = std::move(fresh);  // before the first poll: fine
  EXPECT_TRUE(party.poll(moved).is_pending());
  try {
    SemaphoreAcquire again = std::move(moved);
    ADD_FAILURE() << "moving a waiting acquire did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("spool::SemaphoreAcquire moved while it waits"),
              std::string::npos)
        << e.what();
  }
  s.add_permits(1);  // the original, still linked, gets it
  EXPECT_TRUE(party.poll(moved).is_ready());
}

// --- on runtimes ---

class SemaphoreAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(SemaphoreAnyFlavor);

// Tasks hold 2 of 3 permits at a time: at most one holds at once, and all finish.
spool::Task<void> hold_twice(Semaphore* s, std::atomic<int>* holders, std::atomic<int>* max_seen,
                             int rounds) {
  for (int i = 0; i < rounds; ++i) {
    SemaphorePermit p = co_await s->acquire(2);
    const int now = holders->fetch_add(1) + 1;
    int seen = max_seen->load();
    while (now > seen && !max_seen->compare_exchange_weak(seen, now)) {
    }
    co_await spool::yield_now();
    holders->fetch_sub(1);
  }
}

TEST_P(SemaphoreAnyFlavor, TasksShareThePermits) {
  auto rt = build();
  Semaphore s(3);
  // `holders`: incremented / decremented (seq_cst) around each hold of 3 permits; `max_seen`:
  // the largest count a holder saw (seq_cst), read after the joins. More than one holder at
  // once would mean the semaphore gave out more than its 3 permits.
  std::atomic<int> holders{0}, max_seen{0};
  std::vector<spool::JoinHandle<void>> tasks;
  for (int i = 0; i < 4; ++i) tasks.push_back(rt.spawn(hold_twice(&s, &holders, &max_seen, 200)));
  for (auto& t : tasks) wait(rt, std::move(t));
  EXPECT_EQ(max_seen.load(), 1);
  EXPECT_EQ(s.available_permits(), 3u);
}

}  // namespace
