// Cancelling timers: a Sleep dropped after its first poll (in its task, by aborting the task,
// or on another thread that took it over) never fires and counts as cancelled; a Sleep
// moves freely until its first poll and refuses to move afterwards. Cancelling applies to
// both runtime flavours (CancelAnyFlavor.<test>/MultiThread and .../CurrentThread, on the
// real clock with deadlines an hour away); the paused clock then shows that the deadline
// passes without a fire.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Instant;
using spool::Task;
using spool_time_test::metrics;
using spool_time_test::paused_runtime;
using spool_time_test::poll_once;

class CancelAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(CancelAnyFlavor);

void expect_counters(const spool::RuntimeMetrics& m, std::uint64_t armed, std::uint64_t fired,
                     std::uint64_t cancelled) {
  EXPECT_EQ(m.timers_armed, armed);
  EXPECT_EQ(m.timers_fired, fired);
  EXPECT_EQ(m.timers_cancelled, cancelled);
}

// Polled once (armed, the task's waker stored), then dropped by the task itself.
Task<void> poll_then_drop() {
  auto s = std::make_unique<spool::Sleep>(spool::sleep(1h));
  EXPECT_FALSE(co_await poll_once(*s));
  expect_counters(metrics(), 1, 0, 0);
  s.reset();
  expect_counters(metrics(), 1, 0, 1);
}

TEST_P(CancelAnyFlavor, DroppedAfterItsFirstPollIsCancelled) {
  auto rt = build();
  rt.block_on(poll_then_drop());
  expect_counters(rt.metrics(), 1, 0, 1);
}

// Never polled: never armed, so dropping it cancels nothing.
Task<void> drop_unpolled() {
  { auto s = spool::sleep(1h); }
  expect_counters(metrics(), 0, 0, 0);
  co_return;
}

TEST_P(CancelAnyFlavor, DroppedBeforeItsFirstPollIsNotCounted) {
  auto rt = build();
  rt.block_on(drop_unpolled());
}

Task<void> sleep_an_hour() { co_await spool::sleep(1h); }

// Aborting a task that awaits a Sleep destroys the Sleep: a cancel.
Task<void> abort_sleeping_task() {
  auto h = spool::spawn(sleep_an_hour());
  while (metrics().timers_armed == 0) co_await spool::yield_now();  // until it awaits
  h.abort();
  bool cancelled = false;
  try {
    co_await h;
  } catch (const spool::JoinError& e) {
    cancelled = e.is_cancelled();
  }
  EXPECT_TRUE(cancelled);
  expect_counters(metrics(), 1, 0, 1);
}

TEST_P(CancelAnyFlavor, AbortingTheWaitingTaskCancelsItsSleep) {
  auto rt = build();
  rt.block_on(abort_sleeping_task());
}

// Polled once in a task, then handed (in a unique_ptr: the Sleep itself never moves) to a
// std::thread that destroys it while the task waits for that thread.
Task<void> cancel_on_other_thread() {
  auto s = std::make_unique<spool::Sleep>(spool::sleep(1h));
  EXPECT_FALSE(co_await poll_once(*s));
  std::thread other([owned = std::move(s)]() mutable { owned.reset(); });
  other.join();
  expect_counters(metrics(), 1, 0, 1);
}

TEST_P(CancelAnyFlavor, CancelledFromAnotherThread) {
  auto rt = build();
  rt.block_on(cancel_on_other_thread());
  expect_counters(rt.metrics(), 1, 0, 1);
}

// The paused clock: the cancelled deadlines pass, nothing fires; a Sleep still armed does.
Task<void> cancelled_never_fire() {
  const Instant start = spool::time::now();
  auto kept = std::make_unique<spool::Sleep>(spool::sleep(30ms));
  auto dropped_here = std::make_unique<spool::Sleep>(spool::sleep(10ms));
  auto dropped_there = std::make_unique<spool::Sleep>(spool::sleep(20ms));
  EXPECT_FALSE(co_await poll_once(*kept));
  EXPECT_FALSE(co_await poll_once(*dropped_here));
  EXPECT_FALSE(co_await poll_once(*dropped_there));
  dropped_here.reset();
  std::thread other([owned = std::move(dropped_there)]() mutable { owned.reset(); });
  other.join();
  co_await spool::time::advance(25ms);
  expect_counters(metrics(), 3, 0, 2);
  EXPECT_FALSE(kept->is_elapsed());
  co_await *kept;  // the clock jumps to the one timer left
  EXPECT_EQ(spool::time::now() - start, 30ms);
  expect_counters(metrics(), 3, 1, 2);
}

TEST(CancelPaused, CancelledDeadlinesPassWithoutFiring) {
  auto rt = paused_runtime();
  rt.block_on(cancelled_never_fire());
}

// --- Moving ---

Task<void> move_before_and_after_poll() {
  const Instant start = spool::time::now();
  auto original = spool::sleep(10ms);
  spool::Sleep moved(std::move(original));  // never polled: fine
  EXPECT_EQ(moved.deadline() - start, 10ms);
  EXPECT_FALSE(co_await poll_once(moved));
  EXPECT_THROW(spool::Sleep again(std::move(moved)), std::logic_error);
  // The failed move left the armed Sleep as it was: it still fires, in place.
  co_await moved;
  EXPECT_EQ(spool::time::now() - start, 10ms);
  expect_counters(metrics(), 1, 1, 0);
}

TEST(SleepMove, MovingBeforeTheFirstPollIsFineAfterItThrows) {
  auto rt = paused_runtime();
  rt.block_on(move_before_and_after_poll());
}

// Once ready a Sleep is unlinked (or never was: due at its first poll) and may move again;
// the moved one keeps its place in the driver's shards, so a reset arms it at once.
Task<void> move_once_ready() {
  const Instant start = spool::time::now();
  auto fired = spool::sleep(10ms);
  co_await fired;
  spool::Sleep moved(std::move(fired));
  EXPECT_TRUE(moved.is_elapsed());
  moved.reset(spool::time::now() + 5ms);
  co_await moved;
  EXPECT_EQ(spool::time::now() - start, 15ms);
  auto due = spool::sleep(0ms);
  EXPECT_TRUE(co_await poll_once(due));
  spool::Sleep moved_too(std::move(due));
  EXPECT_TRUE(moved_too.is_elapsed());
  expect_counters(metrics(), 2, 2, 0);
}

TEST(SleepMove, MovingOnceReadyIsFine) {
  auto rt = paused_runtime();
  rt.block_on(move_once_ready());
}

// The moved-from Sleep keeps no driver: each use is a clear error, never a null dereference
// (nor a completion: it was due, and its state went with the move).
Task<void> use_after_move() {
  for (const auto d : {10ms, 0ms}) {
    auto original = spool::sleep(d);
    spool::Sleep moved(std::move(original));
    EXPECT_THROW((void)co_await poll_once(original), std::logic_error) << d.count() << " ms";
    EXPECT_THROW(original.reset(spool::time::now() + 1ms), std::logic_error);
    EXPECT_FALSE(original.is_elapsed());
    co_await moved;  // the moved-into Sleep is whole
  }
  expect_counters(metrics(), 1, 1, 0);
}

TEST(SleepMove, UsingTheMovedFromSleepThrows) {
  auto rt = paused_runtime();
  rt.block_on(use_after_move());
}

}  // namespace
