// Misuse of the clock controls and of the timer settings: each throws a clear exception
// instead of doing something surprising.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Task;
using spool_time_test::paused_runtime;

TEST(TimeMisuse, PauseOnAMultiThreadRuntimeThrows) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  rt.block_on([]() -> Task<void> {
    EXPECT_THROW(spool::time::pause(), std::logic_error);
    EXPECT_THROW(spool::time::resume(), std::logic_error);
    co_return;
  }());
  // On a worker thread too.
  spool::block_on(rt.spawn([]() -> Task<void> {
    EXPECT_THROW(spool::time::pause(), std::logic_error);
    EXPECT_THROW(co_await spool::time::advance(1ms), std::logic_error);
  }()));
}

TEST(TimeMisuse, PauseResumeAdvanceOutsideARuntimeThrow) {
  EXPECT_THROW(spool::time::pause(), std::logic_error);
  EXPECT_THROW(spool::time::resume(), std::logic_error);
  EXPECT_THROW(spool::block_on(spool::time::advance(1ms)), std::logic_error);
}

TEST(TimeMisuse, AdvanceWhenNotPausedThrowsAtTheFirstPoll) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto adv = spool::time::advance(1ms);  // making it does not throw
    EXPECT_THROW(co_await adv, std::logic_error);
  }());
}

TEST(TimeMisuse, NegativeAdvanceThrows) {
  auto rt = paused_runtime();
  rt.block_on([]() -> Task<void> {
    const auto start = spool::time::now();
    EXPECT_THROW(co_await spool::time::advance(-1ms), std::invalid_argument);
    EXPECT_EQ(spool::time::now() - start, 0ms);
  }());
}

TEST(TimeMisuse, PauseTwiceAndResumeWhenRunningThrow) {
  auto rt = paused_runtime();
  rt.block_on([]() -> Task<void> {
    EXPECT_THROW(spool::time::pause(), std::logic_error);  // start_paused already
    spool::time::resume();
    EXPECT_THROW(spool::time::resume(), std::logic_error);
    spool::time::pause();
    co_return;
  }());
}

TEST(TimeMisuse, StartPausedMultiThreadIsRefused) {
  EXPECT_THROW(spool::Builder::multi_thread().start_paused(true).build(), std::invalid_argument);
  // start_paused(false) is the default, and fine.
  EXPECT_NO_THROW(spool::Builder::multi_thread().worker_threads(1).start_paused(false).build());
}

TEST(TimeMisuse, TimerWheelsOutOfRangeAreRefused) {
  // More wheels than workers: some would never be used.
  EXPECT_THROW(spool::Builder::multi_thread().worker_threads(2).timer_wheels(3).build(),
               std::invalid_argument);
  // A current-thread runtime has its one wheel.
  EXPECT_THROW(spool::Builder::current_thread().timer_wheels(2).build(), std::invalid_argument);
  EXPECT_NO_THROW(spool::Builder::current_thread().timer_wheels(1).build());
  EXPECT_NO_THROW(spool::Builder::multi_thread().worker_threads(2).timer_wheels(1).build());
  EXPECT_NO_THROW(spool::Builder::multi_thread().worker_threads(2).timer_wheels(0).build());
}

class TimeMisuseAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(TimeMisuseAnyFlavor);

TEST_P(TimeMisuseAnyFlavor, NonPositiveTimerResolutionIsRefused) {
  EXPECT_THROW(builder().timer_resolution(0ns).build(), std::invalid_argument);
  EXPECT_THROW(builder().timer_resolution(-1ms).build(), std::invalid_argument);
  EXPECT_NO_THROW(builder().timer_resolution(1ns).build());
}

}  // namespace
