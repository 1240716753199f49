// ThreadDriverRef: the timers made on a worker count their references to the driver in a
// block of the worker's own, which keeps the driver alive as long as any of them.
#include "driver/thread_driver_ref.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "driver/driver.hpp"
#include "runtime/current_driver.hpp"
#include "spool/runtime.hpp"
#include "spool/time.hpp"

namespace {

using spool::detail::Driver;
using spool::detail::ThreadDriverRef;
using namespace std::chrono_literals;

std::shared_ptr<Driver> make_driver() { return std::make_shared<Driver>(Driver::Options{}); }

TEST(ThreadDriverRef, CopiesOfTheThreadsReferenceCountInItsOwnBlock) {
  const std::shared_ptr<Driver> driver = make_driver();
  ThreadDriverRef scope(driver);
  EXPECT_EQ(driver.use_count(), 2);  // the block's one reference
  const std::shared_ptr<Driver>& own = ThreadDriverRef::for_timer(driver);
  EXPECT_NE(&own, &driver);
  EXPECT_EQ(own.get(), driver.get());
  const std::vector<std::shared_ptr<Driver>> timers(100, own);
  EXPECT_EQ(driver.use_count(), 2);
  EXPECT_EQ(own.use_count(), 101);
}

TEST(ThreadDriverRef, ACopyKeepsTheDriverAliveAfterTheScopeAndTheRuntimesReference) {
  std::shared_ptr<Driver> driver = make_driver();
  const std::weak_ptr<Driver> weak = driver;
  std::shared_ptr<Driver> timer;
  {
    ThreadDriverRef scope(driver);
    timer = ThreadDriverRef::for_timer(driver);
  }
  driver.reset();
  EXPECT_FALSE(weak.expired());
  timer.reset();
  EXPECT_TRUE(weak.expired());
}

TEST(ThreadDriverRef, OtherDriversAndOtherThreadsGetTheDriversOwnReference) {
  const std::shared_ptr<Driver> driver = make_driver();
  const std::shared_ptr<Driver> other = make_driver();
  EXPECT_EQ(&ThreadDriverRef::for_timer(driver), &driver);  // no scope yet
  ThreadDriverRef scope(driver);
  EXPECT_EQ(&ThreadDriverRef::for_timer(other), &other);
  const std::shared_ptr<Driver>* seen = nullptr;
  std::thread([&] { seen = &ThreadDriverRef::for_timer(driver); }).join();
  EXPECT_EQ(seen, &driver);
  {
    ThreadDriverRef inner(other);
    EXPECT_EQ(&ThreadDriverRef::for_timer(driver), &driver);  // hidden by the inner scope
  }
  EXPECT_NE(&ThreadDriverRef::for_timer(driver), &driver);  // restored
}

// On a runtime: the sleeps a task makes on a worker leave the runtime's driver's count
// alone. One worker, and the task spawned from inside block_on (whose reactor slot copies
// the driver first): no other thread copies the driver meanwhile.
spool::Task<void> make_sleeps_and_count() {
  const long before = spool::detail::current_driver().use_count();
  std::vector<std::unique_ptr<spool::Sleep>> sleeps;
  for (int i = 0; i < 100; ++i) sleeps.push_back(std::make_unique<spool::Sleep>(spool::sleep(1h)));
  EXPECT_EQ(spool::detail::current_driver().use_count(), before);
  co_return;
}

TEST(ThreadDriverRef, SleepsMadeByATaskLeaveTheRuntimesCountAlone) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  rt.block_on([]() -> spool::Task<void> { co_await spool::spawn(make_sleeps_and_count()); }());
}

}  // namespace
