// SignalPump (src/net/signal_pump.hpp), the pipe behind spool::signal: a wake of its waker
// only asks the thread in the driver for a pump, whatever thread wakes it; it pumps after
// its next wait, on its own thread (also under many concurrent wakes: a race for TSan).
#include "net/signal_pump.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "driver/driver.hpp"

namespace {

using spool::detail::Driver;
using spool::detail::SignalPump;

TEST(SignalPump, AWakeOnAnotherThreadOnlyAsksTheThreadInTheDriverWhichPumpsAfterItsWait) {
  const auto driver = std::make_shared<Driver>(Driver::Options{});
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
  std::vector<std::thread::id> pumps;  // the thread of each pump's delivery
  {
    SignalPump pump(driver, fds[0], [&] { pumps.push_back(std::this_thread::get_id()); });
    EXPECT_TRUE(pumps.empty());  // nothing drives the driver yet
    driver->park(std::chrono::nanoseconds::zero());
    ASSERT_EQ(pumps.size(), 1u);  // the first pump: the waker waits for the pipe's edges
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    std::thread([&] { pump.waker().wake_by_ref(); }).join();
    EXPECT_EQ(pumps.size(), 1u) << "the wake pumped on the waking thread";
    driver->park(std::chrono::nanoseconds::zero());
    EXPECT_GE(pumps.size(), 2u);
    for (const std::thread::id id : pumps) EXPECT_EQ(id, std::this_thread::get_id());
  }  // (before the driver parks again: it would run the pump)
  ::close(fds[1]);
}

// Three threads wake the pump (and write to the pipe) while this thread drives the driver:
// every pump runs here.
TEST(SignalPump, ConcurrentWakesArePumpedByTheThreadInTheDriverOnly) {
  const auto driver = std::make_shared<Driver>(Driver::Options{});
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
  const std::thread::id holder = std::this_thread::get_id();
  int pumps = 0;                  // the thread in the driver's
  std::atomic<int> elsewhere{0};  // seq_cst adds by the pump, read after the joins
  {
    SignalPump pump(driver, fds[0], [&] {
      if (std::this_thread::get_id() != holder) elsewhere.fetch_add(1);
      ++pumps;
    });
    constexpr int kThreads = 3;
    std::atomic<int> finished{0};  // seq_cst: each waker adds, then wakes the thread in the driver
    std::vector<std::thread> wakers;
    for (int t = 0; t < kThreads; ++t) {
      wakers.emplace_back([&] {
        for (int i = 0; i < 2000; ++i) {
          if (i % 64 == 0) (void)!::write(fds[1], "x", 1);
          pump.waker().wake_by_ref();
        }
        finished.fetch_add(1);
        pump.waker().wake_by_ref();  // after the count: the park that sees it returns
      });
    }
    do {
      driver->park(std::nullopt);  // at least once: the wakers may all be done already
    } while (finished.load() < kThreads);
    for (std::thread& t : wakers) t.join();
  }
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_GE(pumps, 1);
  ::close(fds[1]);
}

}  // namespace
