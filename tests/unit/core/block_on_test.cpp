// spool::block_on: results, in-place polling, wake during poll, wake before park, stale
// wakers, and the nested-event-loop misuse.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "spool/spool.hpp"
#include "support/eventfd_reactor.hpp"
#include "support/futures.hpp"
#include "support/sync.hpp"

namespace {

using spool::Context;
using spool::Poll;
using spool::Waker;
using spool_test::EventfdReactor;
using spool_test::poll_fn;
using spool_test::ReadyFuture;
using spool_test::Signal;
using spool_test::spin_until;
using spool_test::WithReactor;
using spool_test::YieldNow;

TEST(BlockOn, ReturnsTheOutputOfAReadyFuture) {
  EXPECT_EQ(spool::block_on(ReadyFuture<int>(1)), 1);
  EXPECT_EQ(spool::block_on(ReadyFuture<std::string>("two")), "two");
  std::unique_ptr<int> p =
      spool::block_on(ReadyFuture<std::unique_ptr<int>>(std::make_unique<int>(3)));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 3);
  spool::block_on(ReadyFuture<void>());

  int x = 0;
  int& r = spool::block_on(poll_fn([&x](Context&) -> Poll<int&> { return x; }));
  EXPECT_EQ(&r, &x);
  static_assert(std::is_same_v<decltype(spool::block_on(ReadyFuture<int>(1))), int>);
}

TEST(BlockOn, PollsAnLvalueFutureInPlace) {
  int polls = 0;
  YieldNow yield(2, &polls);
  spool::block_on(yield);
  EXPECT_EQ(polls, 3);
  // The caller's object was the one polled: it is used up and ready at once now.
  spool::block_on(yield);
  EXPECT_EQ(polls, 4);
}

TEST(BlockOn, RethrowsWhatThePollThrew) {
  auto throws = poll_fn([](Context&) -> Poll<int> { throw std::runtime_error("from poll"); });
  try {
    spool::block_on(throws);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "from poll");
  }
  EXPECT_EQ(spool::block_on(ReadyFuture<int>(1)), 1);  // and the thread can block_on again
}

TEST(BlockOn, AWakeDuringPollCausesExactlyOneMorePoll) {
  int polls = 0;
  spool::block_on(YieldNow(1, &polls));  // wakes itself by reference, then pending
  EXPECT_EQ(polls, 2);

  polls = 0;
  spool::block_on(YieldNow(5, &polls));
  EXPECT_EQ(polls, 6);

  // Waking a clone by value inside poll does the same.
  polls = 0;
  spool::block_on(poll_fn([&polls](Context& cx) -> Poll<void> {
    if (++polls == 2) return Poll<void>::ready();
    Waker(cx.waker()).wake();
    return spool::pending;
  }));
  EXPECT_EQ(polls, 2);
}

TEST(BlockOn, SeveralWakesDuringOnePollCauseOnlyOneMorePoll) {
  // Poll 1 wakes three times and returns pending. Poll 2 waits for a signal that is fired
  // only once block_on has parked in the reactor. Had the three wakes left more than one
  // wake-up behind, block_on would have polled again (a third pending poll) before parking,
  // and the total would be 4, not 3.
  auto reactor = std::make_shared<EventfdReactor>();
  Signal signal;
  int polls = 0;
  auto leaf = WithReactor(reactor, poll_fn([&](Context& cx) -> Poll<void> {
                            if (++polls == 1) {
                              cx.waker().wake_by_ref();
                              cx.waker().wake_by_ref();
                              Waker(cx.waker()).wake();
                              return spool::pending;
                            }
                            return signal.future().poll(cx);
                          }));
  std::thread firer([&] {
    spin_until([&] { return reactor->parks() >= 1; });
    signal.fire();
  });
  spool::block_on(leaf);
  firer.join();
  EXPECT_EQ(polls, 3);
}

TEST(BlockOn, AWakeBeforeTheParkIsNotLost) {
  // The leaf hands a clone of its waker to another thread, which wakes it; the leaf joins
  // that thread inside poll, so the wake provably happens before block_on parks.
  int polls = 0;
  spool::block_on(poll_fn([&polls](Context& cx) -> Poll<void> {
    if (++polls > 1) return Poll<void>::ready();
    std::thread waker_thread([w = cx.waker()]() mutable { std::move(w).wake(); });
    waker_thread.join();
    return spool::pending;
  }));
  EXPECT_EQ(polls, 2);
}

TEST(BlockOn, AWakeBeforeTheParkIsNotLostWhenAReactorIsInstalled) {
  auto reactor = std::make_shared<EventfdReactor>();
  int polls = 0;
  auto leaf = WithReactor(reactor, poll_fn([&polls](Context& cx) -> Poll<void> {
                            if (++polls > 1) return Poll<void>::ready();
                            std::thread t([&cx] { cx.waker().wake_by_ref(); });
                            t.join();
                            return spool::pending;
                          }));
  spool::block_on(leaf);
  EXPECT_EQ(polls, 2);
  EXPECT_EQ(leaf.installed(), 2);
}

TEST(BlockOn, AWakeFromAnotherThreadWhileWaitingCompletesTheFuture) {
  Signal signal;
  std::thread firer([&] {
    spin_until([&] { return signal.polls() >= 1; });  // the first poll returned pending
    signal.fire();
  });
  spool::block_on(signal.future());
  firer.join();
  EXPECT_EQ(signal.polls(), 2);
}

TEST(BlockOn, AWakerThatOutlivesItsBlockOnIsHarmless) {
  std::optional<Waker> kept;
  spool::block_on(poll_fn([&kept](Context& cx) -> Poll<void> {
    kept = cx.waker();
    return Poll<void>::ready();
  }));
  ASSERT_TRUE(kept.has_value());
  kept->wake_by_ref();  // the block_on is gone; its parker is kept alive by the waker

  // A later block_on on this thread has its own waker: the stale one does not wake it. The
  // leaf wakes the stale waker, then waits for a signal fired only after block_on parked
  // in the reactor. Had the stale wake reached this block_on, it would have polled once
  // more before parking (3 polls instead of 2).
  auto reactor = std::make_shared<EventfdReactor>();
  Signal signal;
  int polls = 0;
  auto leaf = WithReactor(reactor, poll_fn([&](Context& cx) -> Poll<void> {
                            ++polls;
                            EXPECT_FALSE(cx.waker().will_wake(*kept));
                            kept->wake_by_ref();
                            return signal.future().poll(cx);
                          }));
  std::thread firer([&] {
    spin_until([&] { return reactor->parks() >= 1; });
    signal.fire();
  });
  spool::block_on(leaf);
  firer.join();
  EXPECT_EQ(polls, 2);
  std::move(*kept).wake();
}

// ---- misuse: nested event loops -------------------------------------------------------------

constexpr const char* kNestedMessage = "nested event loops are not allowed";

TEST(BlockOn, BlockOnInsideAFutureItPollsThrowsNestedEventLoop) {
  static_assert(std::is_base_of_v<std::logic_error, spool::NestedEventLoop>);
  int inner_polls = 0;
  auto inner = poll_fn([&inner_polls](Context&) -> Poll<int> {
    ++inner_polls;
    return 1;
  });
  auto outer = poll_fn([&inner](Context&) -> Poll<int> { return spool::block_on(inner); });
  try {
    spool::block_on(outer);
    FAIL() << "nested block_on did not throw";
  } catch (const spool::NestedEventLoop& e) {
    EXPECT_NE(std::string(e.what()).find(kNestedMessage), std::string::npos) << e.what();
  }
  EXPECT_EQ(inner_polls, 0);  // the nested loop refused before polling anything

  // The thread is no longer marked as running an executor: block_on works again.
  EXPECT_EQ(spool::block_on(inner), 1);
  int polls = 0;
  spool::block_on(YieldNow(1, &polls));
  EXPECT_EQ(polls, 2);
}

TEST(BlockOn, ANestedEventLoopErrorCaughtInsideThePollLeavesTheOuterLoopWorking) {
  bool refused = false;
  int polls = 0;
  auto outer = poll_fn([&](Context& cx) -> Poll<int> {
    ++polls;
    try {
      spool::block_on(ReadyFuture<int>(0));
    } catch (const spool::NestedEventLoop&) {
      refused = true;
    }
    if (polls == 1) {
      cx.waker().wake_by_ref();  // the outer loop keeps running: poll once more
      return spool::pending;
    }
    return 7;
  });
  EXPECT_EQ(spool::block_on(outer), 7);
  EXPECT_TRUE(refused);
  EXPECT_EQ(polls, 2);
  EXPECT_EQ(spool::block_on(ReadyFuture<int>(8)), 8);
}

spool::Task<int> task_that_nests() {
  co_await YieldNow(1);
  co_return spool::block_on(ReadyFuture<int>(1));
}

TEST(BlockOn, NestedEventLoopPropagatesOutOfATask) {
  EXPECT_THROW(spool::block_on(task_that_nests()), spool::NestedEventLoop);
  EXPECT_EQ(spool::block_on(ReadyFuture<int>(2)), 2);
}

TEST(BlockOn, BlockOnIsPerThread) {
  // A block_on running on another thread does not make this thread's block_on nested.
  Signal signal;
  std::thread other([&] { spool::block_on(signal.future()); });
  spin_until([&] { return signal.polls() >= 1; });  // the other thread is inside block_on
  EXPECT_EQ(spool::block_on(ReadyFuture<int>(4)), 4);
  signal.fire();
  other.join();
  EXPECT_EQ(signal.polls(), 2);
}

}  // namespace
