// spool::Task<T>: results of every kind, exceptions, awaiting futures and tasks, Task as a
// Future polled by hand, destruction of a suspended chain, deep await loops, misuse.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "spool/spool.hpp"
#include "support/counting_waker.hpp"
#include "support/futures.hpp"
#include "support/sync.hpp"

namespace {

using spool::Context;
using spool::Task;
using spool::Waker;
using spool_test::CountingWaker;
using spool_test::ReadyFuture;
using spool_test::Signal;
using spool_test::spin_until;
using spool_test::YieldNow;

// ---- coroutines used by the tests ----------------------------------------------------------

Task<int> answer() { co_return 42; }

Task<void> set_flag(bool& flag) {
  flag = true;
  co_return;
}

struct NoDefault {
  explicit NoDefault(int v) : v(v) {}
  int v;
};
Task<NoDefault> make_no_default(int v) { co_return NoDefault(v); }

Task<std::unique_ptr<int>> make_ptr(int v) { co_return std::make_unique<int>(v); }

Task<int> unwrap_ptr(int v) {
  std::unique_ptr<int> p = co_await make_ptr(v);
  co_return *p;
}

Task<int&> pick(int& a, int& b, bool first) {
  if (first) co_return a;
  co_return b;
}

Task<int> write_through_reference(int& a, int& b) {
  int& r = co_await pick(a, b, false);
  r = 99;
  co_return r;
}

Task<const std::string&> longer(const std::string& a, const std::string& b) {
  co_return a.size() >= b.size() ? a : b;
}

// Awaits any future (by value, moved into the awaiter) and returns its output.
template <class F>
Task<spool::future_output_t<F>> await_it(F fut) {
  co_return co_await std::move(fut);
}

// Awaits a child task that awaits `fut`: the leaf sits two levels down.
template <class F>
Task<spool::future_output_t<F>> await_it_nested(F fut) {
  co_return co_await await_it(std::move(fut));
}

Task<int> wait_then_return(Signal::Future f, int v) {
  co_await f;
  co_return v;
}

Task<int> throw_at_depth(int depth) {
  if (depth == 0) throw std::runtime_error("thrown at the bottom");
  int below = co_await throw_at_depth(depth - 1);
  co_return below + 1;
}

Task<int> catch_in_the_middle(int depth) {
  try {
    co_return co_await throw_at_depth(depth);
  } catch (const std::runtime_error&) {
    // handled below: co_await is not allowed in a handler, so only record it here
  }
  co_return -1;
}

Task<int> one() { co_return 1; }

Task<long> sum_of_ones(int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) sum += co_await one();
  co_return sum;
}

Task<int> nest(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await nest(depth - 1);
}

// ---- results --------------------------------------------------------------------------------

TEST(Task, ProducesAValue) {
  EXPECT_EQ(spool::block_on(answer()), 42);
  EXPECT_EQ(spool::block_on(make_no_default(5)).v, 5);
}

TEST(Task, VoidTaskRunsItsBody) {
  bool flag = false;
  spool::block_on(set_flag(flag));
  EXPECT_TRUE(flag);
}

TEST(Task, IsLazyUntilPolled) {
  bool flag = false;
  Task<void> t = set_flag(flag);
  EXPECT_FALSE(flag);
  EXPECT_TRUE(t.valid());
  EXPECT_FALSE(t.done());
  spool::block_on(t);  // an lvalue Task is polled in place
  EXPECT_TRUE(flag);
  EXPECT_TRUE(t.done());
}

TEST(Task, MoveOnlyResult) {
  std::unique_ptr<int> p = spool::block_on(make_ptr(3));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 3);
  EXPECT_EQ(spool::block_on(unwrap_ptr(4)), 4);  // and through co_await
}

TEST(Task, ReferenceResultRefersToTheOriginal) {
  int a = 1;
  int b = 2;
  int& r = spool::block_on(pick(a, b, true));
  EXPECT_EQ(&r, &a);
  EXPECT_EQ(&spool::block_on(pick(a, b, false)), &b);

  EXPECT_EQ(spool::block_on(write_through_reference(a, b)), 99);
  EXPECT_EQ(b, 99);  // written through the reference the child returned
  EXPECT_EQ(a, 1);

  const std::string s1 = "long one";
  const std::string s2 = "short";
  EXPECT_EQ(&spool::block_on(longer(s1, s2)), &s1);
}

// ---- exceptions -----------------------------------------------------------------------------

TEST(Task, ExceptionPropagatesThroughSeveralLevelsAndOutOfBlockOn) {
  try {
    spool::block_on(throw_at_depth(5));
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "thrown at the bottom");
  }
}

TEST(Task, ExceptionCanBeCaughtByAnAwaitingTask) {
  EXPECT_EQ(spool::block_on(catch_in_the_middle(3)), -1);
}

TEST(Task, ExceptionFromALeafPollReachesTheAwaitingCoroutine) {
  // Thrown by the first poll (inside co_await, before any suspension).
  auto throws_at_once = spool_test::poll_fn(
      [](Context&) -> spool::Poll<int> { throw std::runtime_error("first poll"); });
  EXPECT_THROW(spool::block_on(await_it_nested(throws_at_once)), std::runtime_error);

  // Thrown by a later poll (the leaf is pending once, then its poll throws).
  int polls = 0;
  auto throws_later = spool_test::poll_fn([&polls](Context& cx) -> spool::Poll<int> {
    if (++polls == 1) {
      cx.waker().wake_by_ref();
      return spool::pending;
    }
    throw std::runtime_error("second poll");
  });
  try {
    spool::block_on(await_it_nested(throws_later));
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "second poll");
  }
  EXPECT_EQ(polls, 2);
}

// ---- awaiting futures -----------------------------------------------------------------------

TEST(Task, AwaitsAFutureThatIsReadyAtOnceWithoutSuspending) {
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);
  Task<int> t = await_it_nested(ReadyFuture<int>(8));
  spool::Poll<int> p = t.poll(cx);  // ready on the first poll
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 8);
  EXPECT_EQ(cw.counts().total_wakes(), 0);
  EXPECT_EQ(spool::block_on(await_it(ReadyFuture<std::string>("s"))), "s");
  spool::block_on(await_it(ReadyFuture<void>()));
}

TEST(Task, AwaitsAFutureThatIsPendingThenReady) {
  Signal signal;
  std::thread firer([&] {
    spin_until([&] { return signal.polls() >= 1; });  // the task is waiting on it
    signal.fire();
  });
  EXPECT_EQ(spool::block_on(wait_then_return(signal.future(), 5)), 5);
  firer.join();
  EXPECT_EQ(signal.polls(), 2);  // pending once, ready once
}

TEST(Task, AwaitedLvalueFutureIsPolledInPlace) {
  int polls = 0;
  YieldNow yield(2, &polls);
  auto await_ref = [](YieldNow& f) -> Task<void> { co_await f; };
  spool::block_on(await_ref(yield));
  EXPECT_EQ(polls, 3);
  // The caller's object was the one polled: its yields are used up, it is ready at once.
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);
  EXPECT_TRUE(yield.poll(cx).is_ready());
  EXPECT_EQ(cw.counts().total_wakes(), 0);
}

TEST(Task, WakeDuringPollThroughATaskCausesExactlyOneMorePoll) {
  int polls = 0;
  spool::block_on(await_it_nested(YieldNow(1, &polls)));
  EXPECT_EQ(polls, 2);
  polls = 0;
  spool::block_on(await_it(YieldNow(3, &polls)));
  EXPECT_EQ(polls, 4);
}

Task<void> yield_twice(spool::YieldNow& y, int& resumed) {
  co_await y;
  ++resumed;
  co_await y;  // the same object again: already yielded, ready
  ++resumed;
}

// spool::yield_now() awaited in a Task (an awaiter of its own, not a polled leaf) keeps
// YieldNow's contract: pending once with its waker woken (off a runtime: at once), then ready.
TEST(Task, YieldNowIsPendingOnceWithAWakeThenReady) {
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);
  auto task = []() -> Task<int> {
    co_await spool::yield_now();
    co_return 7;
  }();
  EXPECT_FALSE(task.poll(cx).is_ready());
  EXPECT_EQ(cw.counts().total_wakes(), 1);
  auto second = task.poll(cx);
  ASSERT_TRUE(second.is_ready());
  EXPECT_EQ(std::move(second).value(), 7);
  EXPECT_EQ(cw.counts().total_wakes(), 1);
}

TEST(Task, AYieldNowAwaitedAgainIsReadyAtOnce) {
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);
  spool::YieldNow y;
  int resumed = 0;
  auto task = yield_twice(y, resumed);
  EXPECT_FALSE(task.poll(cx).is_ready());
  EXPECT_EQ(resumed, 0);
  EXPECT_TRUE(task.poll(cx).is_ready());
  EXPECT_EQ(resumed, 2);
  EXPECT_EQ(cw.counts().total_wakes(), 1);
}

// ---- a Task is a Future ---------------------------------------------------------------------

static_assert(spool::Future<Task<int>>);
static_assert(spool::Future<Task<void>>);
static_assert(spool::Future<Task<int&>>);
static_assert(std::is_same_v<spool::future_output_t<Task<int&>>, int&>);

TEST(Task, CanBePolledByHandWithAnyContext) {
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);
  Signal signal;
  Task<int> t = wait_then_return(signal.future(), 7);

  EXPECT_TRUE(t.poll(cx).is_pending());
  EXPECT_TRUE(signal.registered_will_wake(w));  // the leaf holds our waker
  EXPECT_EQ(cw.counts().total_wakes(), 0);

  signal.fire();
  EXPECT_EQ(cw.counts().wakes, 1);  // the leaf woke the waker we passed in
  spool::Poll<int> p = t.poll(cx);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 7);
  EXPECT_TRUE(t.done());
}

TEST(Task, EachPollPassesItsOwnWakerToTheLeaf) {
  CountingWaker first;
  CountingWaker second;
  Waker w1 = first.waker();
  Waker w2 = second.waker();
  Signal signal;
  Task<int> t = wait_then_return(signal.future(), 1);
  {
    Context cx(w1);
    EXPECT_TRUE(t.poll(cx).is_pending());
  }
  EXPECT_TRUE(signal.registered_will_wake(w1));
  {
    Context cx(w2);
    EXPECT_TRUE(t.poll(cx).is_pending());
  }
  EXPECT_TRUE(signal.registered_will_wake(w2));
  signal.fire();
  EXPECT_EQ(second.counts().total_wakes(), 1);
  EXPECT_EQ(first.counts().total_wakes(), 0);
}

// A poll while the leaf is still pending polls only the leaf: the coroutine is not resumed.
Task<int> count_resumes(Signal::Future f, int& resumed) {
  co_await f;
  ++resumed;
  co_return 1;
}

TEST(Task, ASpuriousPollCostsOneLeafPollAndNoResume) {
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);
  Signal signal;
  int resumed = 0;
  Task<int> t = count_resumes(signal.future(), resumed);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_TRUE(t.poll(cx).is_pending());
    EXPECT_EQ(signal.polls(), i);
    EXPECT_EQ(resumed, 0);
  }
  signal.fire();
  EXPECT_TRUE(t.poll(cx).is_ready());
  EXPECT_EQ(signal.polls(), 4);
  EXPECT_EQ(resumed, 1);
}

// ---- destruction ----------------------------------------------------------------------------

// Counts live instances (copies and moved-from objects included) in `*live`.
class Tracked {
 public:
  explicit Tracked(int* live) : live_(live) { ++*live_; }
  Tracked(const Tracked& o) : live_(o.live_) { ++*live_; }
  Tracked& operator=(const Tracked&) = delete;
  ~Tracked() { --*live_; }

 private:
  int* live_;
};

// A leaf that carries a Tracked, so that its destruction is counted too. (It has a
// constructor on purpose: g++ 12 destroys the members of an aggregate temporary created
// with braces inside a co_await expression twice — `co_await Agg{...}` — a compiler bug.)
class TrackedLeaf {
 public:
  TrackedLeaf(int* live, Signal::Future inner) : tracked_(live), inner_(std::move(inner)) {}
  spool::Poll<void> poll(Context& cx) { return inner_.poll(cx); }

 private:
  Tracked tracked_;
  Signal::Future inner_;
};

Task<int> tracked_child(int* live, Signal::Future f) {
  Tracked local(live);
  co_await TrackedLeaf(live, std::move(f));  // moved into the child's frame
  co_return 1;
}

Task<int> tracked_parent(int* live, Signal::Future f) {
  Tracked local(live);
  int v = co_await tracked_child(live, std::move(f));
  co_return v + 1;
}

TEST(Task, DestroyingASuspendedTaskDestroysItsWholeFrameChain) {
  int live = 0;
  CountingWaker cw;
  {
    Signal signal;
    {
      Waker w = cw.waker();
      Context cx(w);
      Task<int> t = tracked_parent(&live, signal.future());
      EXPECT_EQ(live, 0);  // lazy: nothing ran yet
      EXPECT_TRUE(t.poll(cx).is_pending());
      // Suspended on the leaf: the parent's local, the child's local and the leaf (one or
      // more Tracked, as the awaiter may hold a moved copy of the temporary) are alive.
      EXPECT_GE(live, 3);
      EXPECT_TRUE(signal.has_registered_waker());
    }  // t destroyed while suspended
    EXPECT_EQ(live, 0);
    // Only the signal still holds a handle of the waker (it was registered there).
    EXPECT_EQ(cw.counts().live(), 1);
  }
  EXPECT_EQ(cw.counts().live(), 0);
  EXPECT_EQ(cw.counts().total_wakes(), 0);
}

Task<void> take_tracked(Tracked t) {
  (void)t;
  co_return;
}

TEST(Task, DestroyingATaskThatNeverRanDestroysItsFrame) {
  int live = 0;
  {
    Task<void> t = take_tracked(Tracked(&live));
    EXPECT_EQ(live, 1);  // the parameter's copy in the frame
  }
  EXPECT_EQ(live, 0);
}

TEST(Task, DestroyingAFinishedTaskDestroysItsFrame) {
  int live = 0;
  Signal signal;
  signal.fire();
  {
    Task<int> t = tracked_parent(&live, signal.future());
    EXPECT_EQ(spool::block_on(t), 2);
    EXPECT_EQ(live, 0);  // the child and its leaf are gone; the parent's local too
  }
  EXPECT_EQ(live, 0);
}

// ---- deep chains ----------------------------------------------------------------------------

TEST(Task, AMillionAwaitsOfTasksThatCompleteAtOnceFinish) {
  EXPECT_EQ(spool::block_on(sum_of_ones(1'000'000)), 1'000'000);
}

TEST(Task, DeeplyNestedAwaitsFinish) { EXPECT_EQ(spool::block_on(nest(100'000)), 100'000); }

// ---- misuse ---------------------------------------------------------------------------------

TEST(Task, PollingAnEmptyTaskThrowsLogicError) {
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);
  Task<int> empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_THROW(empty.poll(cx), std::logic_error);

  Task<int> a = answer();
  Task<int> b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(a.poll(cx), std::logic_error);
  EXPECT_EQ(b.poll(cx).value(), 42);  // the moved-to Task still works
}

TEST(Task, PollingAFinishedTaskThrowsLogicError) {
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);

  Task<int> t = answer();
  ASSERT_EQ(t.poll(cx).value(), 42);
  EXPECT_THROW(t.poll(cx), std::logic_error);

  bool flag = false;
  Task<void> v = set_flag(flag);
  ASSERT_TRUE(v.poll(cx).is_ready());
  EXPECT_THROW(v.poll(cx), std::logic_error);

  Task<std::unique_ptr<int>> m = make_ptr(1);
  ASSERT_NE(m.poll(cx).value(), nullptr);
  EXPECT_THROW(m.poll(cx), std::logic_error);
}

TEST(Task, PollingATaskAgainAfterItThrewThrowsLogicError) {
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);
  Task<int> t = throw_at_depth(2);
  EXPECT_THROW(t.poll(cx), std::runtime_error);
  EXPECT_THROW(t.poll(cx), std::logic_error);
}

Task<int> await_moved_from() {
  Task<int> a = answer();
  Task<int> b = std::move(a);
  co_return co_await a;  // NOLINT(bugprone-use-after-move): deliberate misuse
}

TEST(Task, AwaitingAMovedFromTaskThrowsLogicErrorInTheAwaiter) {
  EXPECT_THROW(spool::block_on(await_moved_from()), std::logic_error);
}

Task<int> await_ref(Task<int>& child) { co_return co_await child; }

TEST(Task, PollingATaskThatAnotherTaskAwaitsThrowsLogicError) {
  CountingWaker cw;
  Waker w = cw.waker();
  Context cx(w);
  Signal signal;
  Task<int> child = wait_then_return(signal.future(), 3);
  Task<int> parent = await_ref(child);
  EXPECT_TRUE(parent.poll(cx).is_pending());
  EXPECT_THROW(child.poll(cx), std::logic_error);
  signal.fire();
  spool::Poll<int> p = parent.poll(cx);  // the refused poll did not disturb the chain
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 3);
}

}  // namespace
