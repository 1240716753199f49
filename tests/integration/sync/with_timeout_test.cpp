// Waiting futures of the primitives raced against spool::timeout (on a paused clock): when
// the deadline wins, the waiting future is destroyed while it waits, and the primitive is
// left as if it had never waited — the lock passes to the next waiter, permits are not lost,
// a message sent afterwards is received.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <utility>

#include "spool/spool.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Task;

Task<void> lock_timeout_passes_the_lock_on() {
  spool::Mutex<int> m(0);
  std::optional<spool::MutexGuard<int>> held = m.try_lock();
  // A second waiter, queued behind the one that times out.
  auto later = spool::spawn([](spool::Mutex<int>* m) -> Task<int> {
    auto g = co_await m->lock();
    co_return ++*g;
  }(&m));
  co_await spool::yield_now();  // `later` is queued now
  auto timed = co_await spool::timeout(10ms, m.lock());
  EXPECT_TRUE(timed.elapsed());
  held.reset();  // the lock goes to `later`, not to the timed-out future
  EXPECT_EQ(co_await std::move(later), 1);
  EXPECT_TRUE(m.try_lock().has_value());
}

TEST(WithTimeout, AMutexLockThatTimesOutPassesTheLockOn) {
  spool_time_test::paused_runtime().block_on(lock_timeout_passes_the_lock_on());
}

Task<void> acquire_timeout_loses_no_permit() {
  spool::Semaphore sem(3);
  std::optional<spool::SemaphorePermit> two = sem.try_acquire(2);
  auto timed = co_await spool::timeout(5ms, sem.acquire(2));  // one of two collected
  EXPECT_TRUE(timed.elapsed());
  EXPECT_EQ(sem.available_permits(), 1u) << "the collected permit was not given back";
  two.reset();
  EXPECT_EQ(sem.available_permits(), 3u);
}

TEST(WithTimeout, ASemaphoreAcquireThatTimesOutLosesNoPermit) {
  spool_time_test::paused_runtime().block_on(acquire_timeout_loses_no_permit());
}

Task<void> recv_timeout_loses_no_message() {
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  auto timed = co_await spool::timeout(5ms, rx.recv());
  EXPECT_TRUE(timed.elapsed());
  EXPECT_TRUE(co_await tx.send(7));
  auto got = co_await spool::timeout(5ms, rx.recv());
  EXPECT_FALSE(got.elapsed());
  if (got) {
    EXPECT_EQ(got.value(), std::optional<int>(7));
  }
}

TEST(WithTimeout, AnMpscReceiveThatTimesOutLosesNoMessage) {
  spool_time_test::paused_runtime().block_on(recv_timeout_loses_no_message());
}

}  // namespace
