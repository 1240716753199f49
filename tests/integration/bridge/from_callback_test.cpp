// spool::from_callback: a callback fired inline, later, from another thread; fail() and an
// exception from the start; every Callback copy dropped uncalled (CallbackDropped); a second
// call (std::logic_error, the first result kept); cancellation: dropping the future runs the
// start's cancel once, only while the result is outstanding, and a late callback after the
// drop is harmless; and awaited in a task of either runtime flavour.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "spool/from_callback.hpp"
#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Callback;
using spool::CallbackDropped;
using spool::from_callback;
using spool_test::HandPoller;

TEST(FromCallback, NothingRunsBeforeTheFirstPoll) {
  bool started = false;
  {
    auto fut = from_callback<int>([&](Callback<int> cb) {
      started = true;
      cb(1);
    });
  }
  EXPECT_FALSE(started);
}

TEST(FromCallback, InlineCallbackIsReadyAtTheFirstPollWithoutAWakeUp) {
  HandPoller p;
  auto fut = from_callback<std::string>([](Callback<std::string> cb) { cb("now"); });
  auto r = p.poll(fut);
  ASSERT_TRUE(r.is_ready());
  EXPECT_EQ(r.value(), "now");
  EXPECT_EQ(p.wakes(), 0);
  EXPECT_THROW(p.poll(fut), std::logic_error);  // polled after it was ready
}

TEST(FromCallback, LaterCallbackWakesTheLatestWaker) {
  std::optional<Callback<int>> saved;
  auto fut = from_callback<int>([&](Callback<int> cb) { saved.emplace(std::move(cb)); });
  HandPoller first;
  HandPoller second;
  EXPECT_TRUE(first.poll(fut).is_pending());
  EXPECT_TRUE(second.poll(fut).is_pending());  // a new waker replaces the first
  (*saved)(42);
  EXPECT_EQ(first.wakes(), 0);
  EXPECT_EQ(second.wakes(), 1);
  EXPECT_EQ(second.poll(fut).value(), 42);
}

TEST(FromCallback, CallbackFromAnotherThreadUnderBlockOn) {
  std::thread worker;
  int got = spool::block_on(from_callback<int>(
      [&](Callback<int> cb) { worker = std::thread([cb = std::move(cb)] { cb(7); }); }));
  worker.join();
  EXPECT_EQ(got, 7);
}

TEST(FromCallback, VoidCallback) {
  std::function<void()> saved;
  auto fut = from_callback<void>([&](Callback<void> cb) { saved = cb; });
  HandPoller p;
  EXPECT_TRUE(p.poll(fut).is_pending());
  saved();
  EXPECT_TRUE(p.poll(fut).is_ready());
}

TEST(FromCallback, FailRethrowsTheError) {
  auto fut = from_callback<int>([](Callback<int> cb) {
    cb.fail(std::make_exception_ptr(std::runtime_error("refused by peer")));
  });
  EXPECT_THROW(
      {
        try {
          spool::block_on(fut);
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "refused by peer");
          throw;
        }
      },
      std::runtime_error);
}

TEST(FromCallback, ExceptionFromStartPropagatesAndEndsTheFuture) {
  HandPoller p;
  auto fut = from_callback<int>([](Callback<int>) -> void { throw std::runtime_error("no slot"); });
  EXPECT_THROW(p.poll(fut), std::runtime_error);
  EXPECT_THROW(p.poll(fut), std::logic_error);
}

TEST(FromCallback, EveryCopyDroppedUncalledThrowsCallbackDropped) {
  std::optional<Callback<int>> a;
  std::optional<Callback<int>> b;
  auto fut = from_callback<int>([&](Callback<int> cb) {
    a.emplace(cb);
    b.emplace(std::move(cb));
  });
  HandPoller p;
  EXPECT_TRUE(p.poll(fut).is_pending());
  a.reset();
  EXPECT_EQ(p.wakes(), 0);  // one copy is still alive
  b.reset();
  EXPECT_EQ(p.wakes(), 1);
  EXPECT_THROW(p.poll(fut), CallbackDropped);
}

TEST(FromCallback, SecondCallThrowsAndKeepsTheFirstResult) {
  std::optional<Callback<int>> saved;
  auto fut = from_callback<int>([&](Callback<int> cb) { saved.emplace(std::move(cb)); });
  HandPoller p;
  EXPECT_TRUE(p.poll(fut).is_pending());
  Callback<int> copy = *saved;
  (*saved)(1);
  EXPECT_THROW(copy(2), std::logic_error);
  EXPECT_THROW(saved->fail(std::make_exception_ptr(std::runtime_error("x"))), std::logic_error);
  EXPECT_EQ(p.poll(fut).value(), 1);
}

TEST(FromCallback, MovedFromCallbackThrows) {
  std::optional<Callback<int>> saved;
  auto fut = from_callback<int>([&](Callback<int> cb) { saved.emplace(std::move(cb)); });
  HandPoller p;
  EXPECT_TRUE(p.poll(fut).is_pending());
  Callback<int> moved = std::move(*saved);
  EXPECT_THROW((*saved)(1), std::logic_error);  // NOLINT(bugprone-use-after-move)
  moved(3);
  EXPECT_EQ(p.poll(fut).value(), 3);
}

TEST(FromCallback, DropWhileOutstandingRunsCancelOnceAndALateCallbackIsHarmless) {
  int cancels = 0;
  std::optional<Callback<std::unique_ptr<int>>> saved;
  HandPoller p;
  {
    auto fut = from_callback<std::unique_ptr<int>>([&](Callback<std::unique_ptr<int>> cb) {
      saved.emplace(std::move(cb));
      return [&] { ++cancels; };
    });
    EXPECT_TRUE(p.poll(fut).is_pending());
    EXPECT_EQ(p.live_wakers(), 1);
  }
  EXPECT_EQ(cancels, 1);
  EXPECT_EQ(p.live_wakers(), 0);       // the dropped future's waker is gone
  (*saved)(std::make_unique<int>(5));  // late: discarded (ASan: freed with the last copy)
  EXPECT_EQ(p.wakes(), 0);
  saved.reset();
}

TEST(FromCallback, NoCancelAfterTheResultOrBeforeTheStart) {
  int cancels = 0;
  auto start = [&](Callback<int> cb) {
    cb(1);
    return [&] { ++cancels; };
  };
  { auto never_polled = from_callback<int>(start); }
  {
    auto done = from_callback<int>(start);
    HandPoller p;
    EXPECT_EQ(p.poll(done).value(), 1);
  }
  {
    // Completed but never polled again: the result came, so there is nothing to cancel.
    std::optional<Callback<int>> saved;
    auto fut = from_callback<int>([&](Callback<int> cb) {
      saved.emplace(std::move(cb));
      return [&] { ++cancels; };
    });
    HandPoller p;
    EXPECT_TRUE(p.poll(fut).is_pending());
    (*saved)(2);
  }
  EXPECT_EQ(cancels, 0);
}

class FromCallbackAnyFlavor : public spool_rt_test::RtFlavorTest {};

TEST_P(FromCallbackAnyFlavor, AwaitedInATaskCompletedFromAThread) {
  auto rt = build();
  std::thread completer;
  int got = rt.block_on([&]() -> spool::Task<int> {
    co_return co_await from_callback<int>(
        [&](Callback<int> cb) { completer = std::thread([cb = std::move(cb)] { cb(11); }); });
  }());
  completer.join();
  EXPECT_EQ(got, 11);
}

TEST_P(FromCallbackAnyFlavor, CallbackInlineOnAWorker) {
  auto rt = build();
  auto task = rt.spawn([]() -> spool::Task<int> {
    co_return co_await from_callback<int>([](Callback<int> cb) { cb(3); });
  }());
  EXPECT_EQ(wait(rt, std::move(task)), 3);
}

SPOOL_RT_INSTANTIATE_FLAVORS(FromCallbackAnyFlavor);

}  // namespace
