// spool::poll_fn: a future from a callable over Context&, polled by block_on and awaited in
// a Task, pending until the waker it stored is woken.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <thread>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"

namespace spool_comb_test {
namespace {

TEST(PollFn, IsReadyWithWhatTheCallableReturns) {
  auto fut = spool::poll_fn([](Context&) -> Poll<int> { return 42; });
  static_assert(spool::Future<decltype(fut)>);
  EXPECT_EQ(spool::block_on(fut), 42);
}

TEST(PollFn, PendsUntilTheStoredWakerIsWoken) {
  int polls = 0;
  std::optional<Waker> stored;
  std::optional<std::thread> waker_thread;
  auto fut = spool::poll_fn([&](Context& cx) -> Poll<int> {
    if (++polls == 2) return 7;
    stored.emplace(cx.waker());
    waker_thread.emplace([&stored] { std::move(*stored).wake(); });
    return spool::pending;
  });
  EXPECT_EQ(spool::block_on(fut), 7);
  waker_thread->join();
  EXPECT_EQ(polls, 2);
}

spool::Task<int> awaits_poll_fn() {
  int calls = 0;
  auto fut = spool::poll_fn([&calls](Context& cx) -> Poll<int> {
    if (++calls < 3) {
      cx.waker().wake_by_ref();
      return spool::pending;
    }
    return calls;
  });
  co_return co_await fut;
}

TEST(PollFn, CanBeAwaitedInATask) { EXPECT_EQ(spool::block_on(awaits_poll_fn()), 3); }

TEST(PollFn, AnExceptionFromTheCallablePropagates) {
  auto fut = spool::poll_fn([](Context&) -> Poll<void> { throw std::runtime_error("poll_fn"); });
  EXPECT_THROW(spool::block_on(fut), std::runtime_error);
}

}  // namespace
}  // namespace spool_comb_test
