// TimeDriver (src/driver/time/time_driver.hpp) on a paused clock, one thread: timers whose
// deadlines share a tick but sit in different wheels (one per worker) fire in one wake-up,
// at the latest of those deadlines, never before one and never after the tick's end.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "driver/thread_parker.hpp"
#include "driver/time/time_driver.hpp"
#include "spool/detail/timer_entry.hpp"

namespace {

using namespace std::chrono_literals;
using spool::detail::ThreadParker;
using spool::detail::TimeDriver;
using spool::detail::TimerEntry;

TEST(TimeDriver, ATickSpreadOverTwoWheelsFiresInOneWakeUpAtItsLatestDeadline) {
  TimeDriver time(std::make_shared<ThreadParker>(), 1ms, /*start_paused=*/true, /*shards=*/2,
                  nullptr);
  time.set_parker(TimeDriver::Parker::kScheduler);  // idle: the paused clock may jump
  const auto start = time.clock().now();            // on a tick boundary
  TimerEntry early, late, next_tick;
  TimeDriver::set_thread_shard(0);
  time.arm(early, start + 3200us);
  TimeDriver::set_thread_shard(1);
  time.arm(late, start + 3700us);
  time.arm(next_tick, start + 4100us);
  EXPECT_NE(early.shard, late.shard);

  time.park(std::nullopt);  // one wake-up: the clock jumps to the tick's latest deadline
  EXPECT_EQ(time.clock().now() - start, 3700us);
  EXPECT_EQ(early.state.load(), TimerEntry::kFired);
  EXPECT_EQ(late.state.load(), TimerEntry::kFired);
  EXPECT_EQ(next_tick.state.load(), TimerEntry::kArmed);

  time.park(std::nullopt);  // alone in its tick: at its deadline
  EXPECT_EQ(time.clock().now() - start, 4100us);
  EXPECT_EQ(next_tick.state.load(), TimerEntry::kFired);
  time.shutdown();
}

}  // namespace
