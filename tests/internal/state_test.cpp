// The task state transitions (src/task/state.hpp) on a bare state word: each result and
// the bits and reference count it leaves.
#include "task/state.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

namespace {

using namespace spool::detail;

// A spawned task's initial word: NOTIFIED | JOIN_INTEREST, three references.
constexpr std::uint64_t kSpawned = kNotified | kJoinInterest | 3 * kRefOne;

std::uint64_t flags(const StateWord& w) { return w.load() & kFlagMask; }
std::uint64_t refs(const StateWord& w) { return ref_count(w.load()); }

TEST(TaskStateTest, RunningClaimsANotifiedTask) {
  StateWord w{kSpawned};
  EXPECT_EQ(transition_to_running(w), RunClaim::kPoll);
  EXPECT_EQ(flags(w), kRunning | kJoinInterest);
  EXPECT_EQ(refs(w), 3u);  // the entry's reference becomes the claim's
}

TEST(TaskStateTest, RunningACancelledTaskCancelsIt) {
  StateWord w{kSpawned | kCancelled};
  EXPECT_EQ(transition_to_running(w), RunClaim::kCancel);
  EXPECT_EQ(flags(w), kRunning | kJoinInterest | kCancelled);
}

TEST(TaskStateTest, AStaleEntryDropsItsReference) {
  StateWord w{kComplete | 2 * kRefOne};
  EXPECT_EQ(transition_to_running(w), RunClaim::kNone);
  EXPECT_EQ(flags(w), kComplete);
  EXPECT_EQ(refs(w), 1u);
  EXPECT_EQ(transition_to_running(w), RunClaim::kDealloc);  // the last reference
  EXPECT_EQ(refs(w), 0u);
}

TEST(TaskStateTest, IdleAfterAPollDropsTheRunReference) {
  StateWord w{kRunning | kJoinInterest | 3 * kRefOne};
  EXPECT_EQ(transition_to_idle(w), IdleResult::kIdle);
  EXPECT_EQ(flags(w), kJoinInterest);
  EXPECT_EQ(refs(w), 2u);

  StateWord last{kRunning | kRefOne};
  EXPECT_EQ(transition_to_idle(last), IdleResult::kDealloc);
  EXPECT_EQ(refs(last), 0u);
}

TEST(TaskStateTest, AWakeDuringThePollMeansOneMorePoll) {
  StateWord w{kRunning | 2 * kRefOne};
  EXPECT_EQ(transition_to_notified_by_ref(w), WakeResult::kNothing);  // the poller reschedules
  EXPECT_EQ(flags(w), kRunning | kNotified);
  EXPECT_EQ(refs(w), 2u);
  EXPECT_EQ(transition_to_idle(w), IdleResult::kNotified);  // keeps the run reference
  EXPECT_EQ(flags(w), kNotified);
  EXPECT_EQ(refs(w), 2u);
  EXPECT_EQ(transition_to_running(w), RunClaim::kPoll);
}

TEST(TaskStateTest, IdleOfACancelledTaskKeepsTheClaim) {
  StateWord w{kRunning | kCancelled | 2 * kRefOne};
  EXPECT_EQ(transition_to_idle(w), IdleResult::kCancel);
  EXPECT_EQ(flags(w), kRunning | kCancelled);
  EXPECT_EQ(refs(w), 2u);
}

TEST(TaskStateTest, IdleDeferredIsIdleAndNotifiedAtOnce) {
  StateWord w{kRunning | 2 * kRefOne};
  EXPECT_TRUE(transition_to_idle_deferred(w));
  EXPECT_EQ(flags(w), kNotified);
  EXPECT_EQ(refs(w), 2u);

  StateWord cancelled{kRunning | kCancelled | 2 * kRefOne};
  EXPECT_FALSE(transition_to_idle_deferred(cancelled));
  EXPECT_EQ(flags(cancelled), kRunning | kCancelled);
}

TEST(TaskStateTest, CompleteSwapsRunningForComplete) {
  StateWord w{kRunning | kJoinInterest | 2 * kRefOne};
  EXPECT_EQ(transition_to_complete(w), kRunning | kJoinInterest | 2 * kRefOne);
  EXPECT_EQ(flags(w), kComplete | kJoinInterest);
  EXPECT_EQ(refs(w), 2u);
}

TEST(TaskStateTest, AWakeOfAnIdleTaskSubmitsItWithANewReference) {
  StateWord w{kRefOne};
  EXPECT_EQ(transition_to_notified_by_ref(w), WakeResult::kSubmit);
  EXPECT_EQ(flags(w), kNotified);
  EXPECT_EQ(refs(w), 2u);
  EXPECT_EQ(transition_to_notified_by_ref(w), WakeResult::kNothing);  // already notified
  EXPECT_EQ(flags(w), kNotified);
  EXPECT_EQ(refs(w), 2u);
}

TEST(TaskStateTest, AWakeOfACompleteTaskDoesNothing) {
  StateWord w{kComplete | kRefOne};
  EXPECT_EQ(transition_to_notified_by_ref(w), WakeResult::kNothing);
  EXPECT_EQ(w.load(), kComplete | kRefOne);
}

// A wake by value: the Waker's reference (one of the two) goes to the queue entry, or is
// dropped in the same RMW; the last one of a complete task says free it.
TEST(TaskStateTest, AWakeByValueHandsOverOrDropsTheWakersReference) {
  StateWord idle{2 * kRefOne};
  EXPECT_EQ(transition_to_notified_by_val(idle), WakeResult::kSubmit);
  EXPECT_EQ(flags(idle), kNotified);
  EXPECT_EQ(refs(idle), 2u);  // the Waker's is now the queue entry's
  EXPECT_EQ(transition_to_notified_by_val(idle), WakeResult::kNothing);  // already notified
  EXPECT_EQ(flags(idle), kNotified);
  EXPECT_EQ(refs(idle), 1u);

  StateWord running{kRunning | 2 * kRefOne};
  EXPECT_EQ(transition_to_notified_by_val(running), WakeResult::kNothing);
  EXPECT_EQ(flags(running), kRunning | kNotified);  // the poller reschedules
  EXPECT_EQ(refs(running), 1u);

  StateWord complete{kComplete | 2 * kRefOne};
  EXPECT_EQ(transition_to_notified_by_val(complete), WakeResult::kNothing);
  EXPECT_EQ(complete.load(), kComplete | kRefOne);
  EXPECT_EQ(transition_to_notified_by_val(complete), WakeResult::kDealloc);
  EXPECT_EQ(refs(complete), 0u);
}

TEST(TaskStateTest, AbortSchedulesAnIdleTaskToCancelIt) {
  StateWord w{kJoinInterest | 2 * kRefOne};
  EXPECT_EQ(transition_to_notified_and_cancel(w), WakeResult::kSubmit);
  EXPECT_EQ(flags(w), kJoinInterest | kCancelled | kNotified);
  EXPECT_EQ(refs(w), 3u);
  EXPECT_EQ(transition_to_notified_and_cancel(w), WakeResult::kNothing);  // once only
  EXPECT_EQ(refs(w), 3u);
}

TEST(TaskStateTest, AbortOfARunningOrNotifiedTaskOnlyMarksIt) {
  StateWord running{kRunning | 2 * kRefOne};
  EXPECT_EQ(transition_to_notified_and_cancel(running), WakeResult::kNothing);
  EXPECT_EQ(flags(running), kRunning | kCancelled);
  EXPECT_EQ(refs(running), 2u);

  StateWord notified{kNotified | 2 * kRefOne};
  EXPECT_EQ(transition_to_notified_and_cancel(notified), WakeResult::kNothing);
  EXPECT_EQ(flags(notified), kNotified | kCancelled);

  StateWord complete{kComplete | kRefOne};
  EXPECT_EQ(transition_to_notified_and_cancel(complete), WakeResult::kNothing);
  EXPECT_EQ(complete.load(), kComplete | kRefOne);
}

TEST(TaskStateTest, ShutdownClaimsOnlyAnIdleTask) {
  StateWord idle{kJoinInterest | kRefOne};
  EXPECT_TRUE(transition_to_shutdown(idle));
  EXPECT_EQ(flags(idle), kJoinInterest | kRunning | kCancelled);
  EXPECT_EQ(refs(idle), 1u);

  StateWord running{kRunning | kRefOne};
  EXPECT_FALSE(transition_to_shutdown(running));
  EXPECT_EQ(flags(running), kRunning | kCancelled);

  StateWord complete{kComplete | kRefOne};
  EXPECT_FALSE(transition_to_shutdown(complete));
  EXPECT_EQ(flags(complete), kComplete | kCancelled);
}

TEST(TaskStateTest, ReferencesCountUpAndDownToZeroOnce) {
  StateWord w{kRefOne};
  ref_inc(w);
  EXPECT_EQ(refs(w), 2u);
  ref_inc(w);
  EXPECT_FALSE(ref_dec(w));
  EXPECT_FALSE(ref_dec(w));
  EXPECT_TRUE(ref_dec(w));  // the last one
  EXPECT_EQ(refs(w), 0u);

  StateWord two{kNotified | 2 * kRefOne};
  EXPECT_TRUE(ref_dec(two, 2));
  EXPECT_EQ(flags(two), kNotified);  // the flags are untouched
}

// A new Waker's reference is counted as made in the same RMW; the count sits above the
// references (every transition reads them alone), is never decreased, and wraps at 2^26
// without touching them.
TEST(TaskStateTest, AWakersReferenceIsCountedAsMadeAboveTheReferences) {
  StateWord w{kNotified | kRefOne};
  ref_inc_waker(w);
  ref_inc_waker(w);
  ref_inc(w);  // not a Waker (a queue entry, a reader)
  EXPECT_EQ(refs(w), 4u);
  EXPECT_EQ(wakers_made(w.load()), 2u);
  EXPECT_FALSE(ref_dec(w, 3));
  EXPECT_EQ(wakers_made(w.load()), 2u);  // gone, still made
  EXPECT_EQ(flags(w), kNotified);
  EXPECT_EQ(transition_to_running(w), RunClaim::kPoll);
  EXPECT_EQ(refs(w), 1u);

  StateWord wrapping{((std::uint64_t{1} << 26) - 1) * kMadeOne | kRefOne};
  ref_inc_waker(wrapping);
  EXPECT_EQ(wakers_made(wrapping.load()), 0u);
  EXPECT_EQ(refs(wrapping), 2u);
  EXPECT_EQ(flags(wrapping), 0u);
}

// Past kMaxWakerRefs references a new Waker ends the program with a message, before its
// reference could carry into the count above.
TEST(TaskStateDeathTest, TooManyWakersEndTheProgram) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  StateWord w{(kMaxWakerRefs - 1) * kRefOne};
  ref_inc_waker(w);  // the last one that fits
  EXPECT_EQ(refs(w), kMaxWakerRefs);
  EXPECT_DEATH(ref_inc_waker(w), "about 2\\^32 live Wakers");
}

TEST(TaskStateTest, JoinDropBeforeCompletionDropsInterestAndReferenceInOneStep) {
  StateWord pending{kNotified | kJoinInterest | 3 * kRefOne};
  EXPECT_FALSE(transition_to_join_dropped(pending));
  EXPECT_EQ(flags(pending), kNotified);
  EXPECT_EQ(refs(pending), 2u);
}

TEST(TaskStateTest, JoinDropAfterCompletionLeavesTheWordToTheCaller) {
  // The caller destroys the frame first, then drops the reference itself.
  StateWord complete{kComplete | kJoinInterest | 2 * kRefOne};
  EXPECT_TRUE(transition_to_join_dropped(complete));
  EXPECT_EQ(flags(complete), kComplete | kJoinInterest);
  EXPECT_EQ(refs(complete), 2u);
}

// What a Waker built with Waker::from wakes (its wake-ups are not counted here).
struct NoWake {
  void wake() {}
};

TEST(TaskStateTest, JoinWakerGuardsTheSlotWhichIsRewrittenOnlyBeforeCompletion) {
  const spool::Waker a = spool::Waker::from(std::make_shared<NoWake>());
  const spool::Waker b = spool::Waker::from(std::make_shared<NoWake>());
  spool::Waker slot;  // a no-op waker, as in a new header
  StateWord w{kRunning | kJoinInterest | 2 * kRefOne};
  EXPECT_FALSE(join_register_waker(w, slot, a));
  EXPECT_EQ(flags(w), kRunning | kJoinInterest | kJoinWaker);
  EXPECT_TRUE(slot.will_wake(a));
  EXPECT_FALSE(join_register_waker(w, slot, a));  // the same waker: nothing to do
  EXPECT_FALSE(join_register_waker(w, slot, b));  // another: taken back, rewritten, set again
  EXPECT_TRUE(slot.will_wake(b));
  EXPECT_EQ(flags(w), kRunning | kJoinInterest | kJoinWaker);
  EXPECT_EQ(transition_to_complete(w), kRunning | kJoinInterest | kJoinWaker | 2 * kRefOne);

  // Complete: the completer may be reading the slot, so it is never rewritten.
  EXPECT_FALSE(transition_to_join_waker_unset(w));
  EXPECT_TRUE(join_register_waker(w, slot, a));
  EXPECT_TRUE(slot.will_wake(b));
  EXPECT_EQ(flags(w), kComplete | kJoinInterest | kJoinWaker);

  spool::Waker unused;
  StateWord complete{kComplete | kJoinInterest | kRefOne};
  EXPECT_TRUE(join_register_waker(complete, unused, a));
  EXPECT_EQ(flags(complete), kComplete | kJoinInterest);  // nothing registered
  EXPECT_FALSE(unused.will_wake(a));
}

TEST(TaskStateTest, CompleteForJoinDropsTheReferencesUnlessTheWordChanged) {
  StateWord w{kRunning | kJoinInterest | 3 * kRefOne};
  std::uint64_t expected = kRunning | kJoinInterest | 3 * kRefOne;
  EXPECT_TRUE(transition_to_complete_for_join(w, expected, 2));
  EXPECT_EQ(flags(w), kComplete | kJoinInterest);
  EXPECT_EQ(refs(w), 1u);  // the JoinHandle's

  // The JoinHandle registered a waker since the caller read the word: nothing changes.
  StateWord polled{kRunning | kJoinInterest | kJoinWaker | 2 * kRefOne};
  std::uint64_t stale = kRunning | kJoinInterest | 2 * kRefOne;
  EXPECT_FALSE(transition_to_complete_for_join(polled, stale, 1));
  EXPECT_EQ(stale, kRunning | kJoinInterest | kJoinWaker | 2 * kRefOne);  // reloaded
  EXPECT_EQ(flags(polled), kRunning | kJoinInterest | kJoinWaker);
}

TEST(TaskStateTest, CompleteAndReleaseDropsTheReferencesWithTheClaim) {
  StateWord w{kRunning | kNotified | 3 * kRefOne};
  EXPECT_FALSE(transition_to_complete_and_release(w, 2));
  EXPECT_EQ(flags(w), kComplete | kNotified);  // a wake during the poll stays recorded
  EXPECT_EQ(refs(w), 1u);

  StateWord last{kRunning | kCancelled | 2 * kRefOne};
  EXPECT_TRUE(transition_to_complete_and_release(last, 2));
  EXPECT_EQ(flags(last), kComplete | kCancelled);
  EXPECT_EQ(refs(last), 0u);
}

}  // namespace
