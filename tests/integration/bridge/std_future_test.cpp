// spool::to_std_future and spool::from_std_future: a task's value, void, exception and abort
// through a std::future read by a plain thread; a runtime shut down under it (get() throws,
// never hangs); and a std::future awaited in a task: ready at once (no blocking thread),
// completed later by another thread while the workers stay free, its own exception rethrown,
// an invalid one refused, and no runtime refused; on both runtime flavours.
#include <gtest/gtest.h>

#include <future>
#include <latch>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "spool/spool.hpp"
#include "spool/std_future.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;

class StdFutureAnyFlavor : public spool_rt_test::RtFlavorTest {};

Task<int> add(int a, int b) { co_return a + b; }
Task<void> nothing() { co_return; }
Task<int> fails() {
  throw std::runtime_error("task failed");
  co_return 0;
}

// Drives a current-thread runtime while `fut` is not ready; a multi-thread one runs alone.
template <class T>
T get(spool::Runtime& rt, bool multi_thread, std::future<T>& fut) {
  if (!multi_thread) {
    rt.block_on([&]() -> Task<void> {
      while (fut.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        co_await spool::yield_now();
      }
    }());
  }
  return fut.get();
}

TEST_P(StdFutureAnyFlavor, ToStdFutureGivesTheValue) {
  auto rt = build();
  auto fut = spool::to_std_future(rt.spawn(add(2, 3)), rt.handle());
  EXPECT_EQ(get(rt, is_multi_thread(), fut), 5);
  auto done = spool::to_std_future(rt.spawn(nothing()), rt.handle());
  get(rt, is_multi_thread(), done);
}

TEST_P(StdFutureAnyFlavor, ToStdFutureThrowsTheJoinErrorWithTheTasksException) {
  auto rt = build();
  auto fut = spool::to_std_future(rt.spawn(fails()), rt.handle());
  try {
    get(rt, is_multi_thread(), fut);
    FAIL() << "get() returned";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_exception());
    EXPECT_THROW(std::rethrow_exception(e.exception()), std::runtime_error);
  }
}

TEST_P(StdFutureAnyFlavor, ToStdFutureOfAnAbortedTask) {
  auto rt = build();
  auto [tx, rx] = spool::oneshot::channel<int>();
  auto handle = rt.spawn(std::move(rx));
  handle.abort();
  auto fut = spool::to_std_future(std::move(handle), rt.handle());
  try {
    get(rt, is_multi_thread(), fut);
    FAIL() << "get() returned";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled());
  }
}

TEST_P(StdFutureAnyFlavor, ToStdFutureInsideATaskUsesTheCurrentRuntime) {
  auto rt = build();
  auto fut = wait(rt, rt.spawn([]() -> Task<std::future<int>> {
    co_return spool::to_std_future(spool::spawn(add(20, 22)));
  }()));
  EXPECT_EQ(get(rt, is_multi_thread(), fut), 42);
}

TEST(StdFuture, ToStdFutureAfterShutdownThrowsInsteadOfHanging) {
  std::optional<spool::Runtime> rt(spool::Builder::multi_thread().worker_threads(1).build());
  auto [tx, rx] = spool::oneshot::channel<int>();
  auto fut = spool::to_std_future(rt->spawn(std::move(rx)), rt->handle());
  rt.reset();  // cancels the waiting task and the relay
  bool threw = false;
  try {
    fut.get();
  } catch (const spool::JoinError& e) {
    threw = e.is_cancelled();  // the relay saw its task cancelled first
  } catch (const std::future_error& e) {
    threw = e.code() == std::future_errc::broken_promise;  // the relay itself was cancelled
  }
  EXPECT_TRUE(threw);
}

TEST(StdFuture, ToStdFutureWithoutARuntimeIsRefused) {
  spool::Runtime rt = spool::Builder::current_thread().build();
  auto handle = rt.spawn(add(1, 1));
  EXPECT_THROW(spool::to_std_future(std::move(handle)), std::logic_error);
}

TEST_P(StdFutureAnyFlavor, FromStdFutureReadyIsReadWithoutABlockingThread) {
  auto rt = build();
  std::promise<std::string> p;
  p.set_value("ready");
  std::string got = rt.block_on(spool::from_std_future(p.get_future()));
  EXPECT_EQ(got, "ready");
  EXPECT_EQ(rt.metrics().blocking_threads, 0u);
}

TEST_P(StdFutureAnyFlavor, FromStdFutureWaitsOnTheBlockingPool) {
  auto rt = build(1);  // one worker: a wait that blocked it would hang the next task
  std::promise<int> p;
  std::future<int> f = p.get_future();
  auto waiter = rt.spawn([](std::future<int> f) -> Task<int> {
    co_return co_await spool::from_std_future(std::move(f));
  }(std::move(f)));
  // The workers stay free: another task runs to completion while the wait holds a pool thread.
  EXPECT_EQ(wait(rt, rt.spawn(add(1, 2))), 3);
  std::thread setter([&p] { p.set_value(9); });
  EXPECT_EQ(wait(rt, std::move(waiter)), 9);
  setter.join();
}

TEST_P(StdFutureAnyFlavor, FromStdFutureRethrowsItsOwnException) {
  auto rt = build();
  std::promise<void> p;
  std::future<void> f = p.get_future();
  std::thread setter([&p] { p.set_exception(std::make_exception_ptr(std::out_of_range("far"))); });
  EXPECT_THROW(rt.block_on(spool::from_std_future(std::move(f))), std::out_of_range);
  setter.join();
}

TEST(StdFuture, FromStdFutureOfAPendingFutureNeedsARuntime) {
  std::promise<int> p;
  EXPECT_THROW(spool::block_on(spool::from_std_future(p.get_future())), std::logic_error);
  std::promise<int> ready;
  ready.set_value(4);  // read at once: no runtime needed
  EXPECT_EQ(spool::block_on(spool::from_std_future(ready.get_future())), 4);
}

TEST(StdFuture, FromStdFutureRefusesAnInvalidFutureAtTheCall) {
  EXPECT_THROW((void)spool::from_std_future(std::future<int>()), std::future_error);
}

SPOOL_RT_INSTANTIATE_FLAVORS(StdFutureAnyFlavor);

}  // namespace
