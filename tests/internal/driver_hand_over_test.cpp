// Driver::maintain hands the driver over to a scheduler thread that parked without it: a
// worker that parks while a busy worker holds the driver for maintenance must not sleep
// through the timers and the I/O until the next maintenance tick.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "driver/driver.hpp"
#include "spool/detail/timer_entry.hpp"

namespace {

using spool::detail::Driver;
using spool::detail::ThreadParker;
using spool::detail::TimerEntry;

// A timer's waker that, while maintain() holds the driver (it fires the timer), lets
// "another worker" park: park_thread with an unpark token already given, so that the park on
// its own parker returns at once and the test stays on one thread.
struct ParkWhileMaintaining {
  Driver* driver;
  ThreadParker parker;
  bool parked_in_driver = true;
  void wake() {
    parker.unpark();
    parked_in_driver = driver->park_thread(parker);
  }
};

TEST(DriverHandOver, MaintainHandsTheDriverToAThreadThatParkedWithoutIt) {
  Driver::Options options;
  options.start_paused = true;  // the test moves time: the timer is due exactly when told
  Driver driver(options);
  int hand_overs = 0;
  driver.set_hand_over([&] { ++hand_overs; });
  auto waker_state = std::make_shared<ParkWhileMaintaining>();
  waker_state->driver = &driver;

  TimerEntry timer;
  timer.waker = spool::Waker::from(waker_state);  // idle: set before arming
  driver.time().arm(timer, driver.time().clock().now() + std::chrono::milliseconds(5));
  driver.time().clock().advance(std::chrono::milliseconds(10));

  int before = hand_overs;  // (arming with nobody in the driver hands it over too)
  driver.maintain();        // fires the timer, whose waker parks "the other worker" meanwhile

  EXPECT_EQ(timer.state.load(), TimerEntry::kFired);
  EXPECT_FALSE(waker_state->parked_in_driver) << "the lock was held: it parked on its own";
  EXPECT_EQ(hand_overs - before, 1) << "maintain let go of the driver without handing it over";

  // Nobody parked without the driver this time: no hand-off (it would wake a worker for
  // nothing at every maintenance tick).
  TimerEntry second;
  driver.time().arm(second, driver.time().clock().now() + std::chrono::milliseconds(5));
  driver.time().clock().advance(std::chrono::milliseconds(10));
  before = hand_overs;
  driver.maintain();
  EXPECT_EQ(second.state.load(), TimerEntry::kFired);
  EXPECT_EQ(hand_overs, before);
  driver.shutdown();
}

// A timer armed while no thread parks in the driver (every scheduler thread asleep on its own
// parker, or busy) gets a thread sent in: nobody else would fire it before a maintenance tick.
TEST(DriverHandOver, ATimerArmedWithNobodyInTheDriverSendsAThreadIn) {
  Driver::Options options;
  options.start_paused = true;
  options.always_driven = true;  // a multi-thread runtime's driver
  Driver driver(options);
  int hand_overs = 0;
  driver.set_hand_over([&] { ++hand_overs; });
  const auto now = driver.time().clock().now();
  TimerEntry first, later;
  driver.time().arm(first, now + std::chrono::milliseconds(5));
  EXPECT_EQ(hand_overs, 1);
  driver.time().arm(later, now + std::chrono::milliseconds(50));  // the earlier one leads
  EXPECT_EQ(hand_overs, 1);
  driver.time().disarm(first);
  driver.time().disarm(later);
  driver.shutdown();
}

}  // namespace
