// spool::timeout and timeout_at on the paused clock: the deadline wins (the inner future is
// destroyed at that moment, before the Timeout is), the inner future wins (its value; the
// timer is then cancelled), TimeoutResult<void>, and value() throwing spool::Elapsed.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <utility>

#include "spool/spool.hpp"
#include "support/futures.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Instant;
using spool::Task;
using spool_time_test::metrics;
using spool_time_test::paused_runtime;
using spool_time_test::PendingDropFlag;

Task<int> value_after(std::chrono::nanoseconds d, int v) {
  co_await spool::sleep(d);
  co_return v;
}

Task<void> nothing_after(std::chrono::nanoseconds d) { co_await spool::sleep(d); }

void run_paused(Task<void> root) {
  auto rt = paused_runtime();
  rt.block_on(std::move(root));
}

Task<void> deadline_wins() {
  const Instant start = spool::time::now();
  bool dropped = false;
  auto t = spool::timeout(10ms, PendingDropFlag(&dropped));
  EXPECT_EQ(t.deadline() - start, 10ms);
  auto r = co_await t;  // polled in place: `t` lives on after the result
  EXPECT_TRUE(r.elapsed());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_TRUE(dropped) << "the inner future was not destroyed when the deadline won";
  EXPECT_EQ(spool::time::now() - start, 10ms);
  EXPECT_THROW(r.value(), spool::Elapsed);
  EXPECT_THROW((void)std::move(r).value(), spool::Elapsed);
  const spool::Waker noop = spool::Waker::noop();
  spool::Context cx(noop);
  EXPECT_THROW((void)t.poll(cx), std::logic_error);  // polled again after it completed
  EXPECT_EQ(metrics().timers_fired, 1u);
}

TEST(Timeout, DeadlineWinsAndDestroysTheInnerFutureAtOnce) { run_paused(deadline_wins()); }

// The inner future is a Task with its own armed Sleep: destroyed at the elapse, it cancels
// that Sleep there and then (before the Timeout goes).
Task<void> deadline_wins_over_task() {
  const Instant start = spool::time::now();
  auto t = spool::timeout(10ms, nothing_after(1h));
  const spool::TimeoutResult<void> r = co_await t;
  EXPECT_TRUE(r.elapsed());
  EXPECT_THROW(r.value(), spool::Elapsed);
  EXPECT_EQ(spool::time::now() - start, 10ms);
  EXPECT_EQ(metrics().timers_armed, 2u);
  EXPECT_EQ(metrics().timers_fired, 1u);      // the deadline
  EXPECT_EQ(metrics().timers_cancelled, 1u);  // the inner task's hour-long sleep, already
}

TEST(Timeout, DeadlineWinsOverATaskCancelsItsTimerAtOnce) { run_paused(deadline_wins_over_task()); }

Task<void> inner_wins() {
  const Instant start = spool::time::now();
  {
    auto r = co_await spool::timeout(10ms, value_after(5ms, 7));
    EXPECT_FALSE(r.elapsed());
    EXPECT_TRUE(static_cast<bool>(r));
    EXPECT_EQ(r.value(), 7);
    EXPECT_EQ(std::move(r).value(), 7);
    EXPECT_EQ(spool::time::now() - start, 5ms);
  }
  // The inner sleep fired; the deadline's timer was cancelled with the Timeout.
  EXPECT_EQ(metrics().timers_armed, 2u);
  EXPECT_EQ(metrics().timers_fired, 1u);
  EXPECT_EQ(metrics().timers_cancelled, 1u);
  {
    const Instant t1 = spool::time::now();
    spool::TimeoutResult<void> r = co_await spool::timeout(10ms, nothing_after(3ms));
    EXPECT_FALSE(r.elapsed());
    EXPECT_TRUE(static_cast<bool>(r));
    EXPECT_NO_THROW(r.value());
    EXPECT_EQ(spool::time::now() - t1, 3ms);
  }
}

TEST(Timeout, InnerFutureWinsWithItsValue) { run_paused(inner_wins()); }

// A ready inner future is polled first: no timer is armed, even with a past deadline.
Task<void> ready_inner_never_arms() {
  auto r = co_await spool::timeout(10ms, spool_test::ReadyFuture<int>(3));
  EXPECT_EQ(r.value(), 3);
  auto r2 = co_await spool::timeout_at(spool::time::now() - 1s, spool_test::ReadyFuture<int>(4));
  EXPECT_EQ(r2.value(), 4);
  EXPECT_EQ(metrics().timers_armed, 0u);
}

TEST(Timeout, ReadyInnerFutureNeverArmsTheTimer) { run_paused(ready_inner_never_arms()); }

// timeout_at with a past deadline and a pending inner future: elapsed at the first poll.
Task<void> past_deadline_elapses_at_once() {
  const Instant start = spool::time::now();
  bool dropped = false;
  auto r = co_await spool::timeout_at(start - 1ms, PendingDropFlag(&dropped));
  EXPECT_TRUE(r.elapsed());
  EXPECT_TRUE(dropped);
  EXPECT_EQ(spool::time::now() - start, 0ms);
  EXPECT_EQ(metrics().timers_armed, 0u);
}

TEST(Timeout, PastDeadlineElapsesAtTheFirstPoll) { run_paused(past_deadline_elapses_at_once()); }

}  // namespace
