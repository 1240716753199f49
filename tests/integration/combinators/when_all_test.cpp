// when_all: the tuple (and vector) of outputs, per-child wakers (only the woken child is
// polled again), the first exception cancelling the siblings, and the misuse errors.
// Polled by hand (a CountingWaker) or with spool::block_on; runtimes: any_executor_test.cpp.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"
#include "support/counting_waker.hpp"
#include "support/futures.hpp"

namespace spool_comb_test {
namespace {

TEST(WhenAll, GivesTheOutputsInArgumentOrder) {
  int x = 7;
  auto fut = spool::when_all(value(1), ReadyFuture<std::string>("two"), ReadyFuture<void>(),
                             spool::poll_fn([&x](Context&) -> Poll<int&> { return x; }));
  static_assert(
      std::is_same_v<decltype(fut)::Output,
                     std::tuple<int, std::string, std::monostate, std::reference_wrapper<int>>>);
  auto [one, two, unit, ref] = spool::block_on(std::move(fut));
  EXPECT_EQ(one, 1);
  EXPECT_EQ(two, "two");
  EXPECT_EQ(unit, std::monostate{});
  EXPECT_EQ(&ref.get(), &x);
}

TEST(WhenAll, OfNothingIsReadyAtOnce) {
  auto none = spool::when_all();
  Waker w = Waker::noop();
  Context cx(w);
  EXPECT_TRUE(none.poll(cx).is_ready());
}

TEST(WhenAll, RepollsOnlyTheChildThatWasWoken) {
  Signal a, b, c;
  auto all = spool::when_all(value_after(a.future(), 1), value_after(b.future(), 2),
                             value_after(c.future(), 3));
  HandPoll hand;

  EXPECT_TRUE(hand.poll(all).is_pending());
  EXPECT_EQ(a.polls() + b.polls() + c.polls(), 3);

  b.fire();
  EXPECT_EQ(hand.wakes(), 1);
  EXPECT_TRUE(hand.poll(all).is_pending());
  EXPECT_EQ(a.polls(), 1);
  EXPECT_EQ(b.polls(), 2);
  EXPECT_EQ(c.polls(), 1);

  // A spurious poll (no child woke) polls no child.
  EXPECT_TRUE(hand.poll(all).is_pending());
  EXPECT_EQ(a.polls() + b.polls() + c.polls(), 4);

  c.fire();
  a.fire();
  auto done = hand.poll(all);
  ASSERT_TRUE(done.is_ready());
  EXPECT_EQ(done.value(), std::make_tuple(1, 2, 3));
  EXPECT_EQ(a.polls(), 2);
  EXPECT_EQ(b.polls(), 2);
  EXPECT_EQ(c.polls(), 2);
}

TEST(WhenAll, DestroysEachChildAsSoonAsItIsReady) {
  Counts first, second;
  Signal s;
  auto all = spool::when_all(Tracked(ReadyFuture<int>(1), first), Tracked(s.future(), second));
  HandPoll hand;
  EXPECT_TRUE(hand.poll(all).is_pending());
  EXPECT_EQ(first.drops.load(), 1);
  EXPECT_EQ(second.drops.load(), 0);
  s.fire();
  EXPECT_TRUE(hand.poll(all).is_ready());
  EXPECT_EQ(second.drops.load(), 1);
}

TEST(WhenAll, FirstExceptionCancelsTheSiblingsAndPropagates) {
  Counts pending_sibling, done_sibling;
  Signal never, fail_first, fail_second;
  auto all = spool::when_all(Tracked(never.future(), pending_sibling),
                             Tracked(ReadyFuture<int>(5), done_sibling),
                             spool_comb_test::throw_after(fail_first.future(), "first"),
                             spool_comb_test::throw_after(fail_second.future(), "second"));
  HandPoll hand;
  EXPECT_TRUE(hand.poll(all).is_pending());
  fail_second.fire();  // both throwing children wake; the first polled throws first
  fail_first.fire();
  EXPECT_EQ(what_thrown<std::runtime_error>([&] { (void)hand.poll(all); }), "first");
  EXPECT_EQ(pending_sibling.drops.load(), 1);  // cancelled before the exception left poll
  EXPECT_EQ(done_sibling.drops.load(), 1);
  EXPECT_THROW((void)hand.poll(all), std::logic_error);  // finished: not to be polled again
}

TEST(WhenAll, OverAVectorGivesAVectorInOrder) {
  std::vector<Signal> signals(70);  // more than one 64-child chunk of wakers
  std::vector<spool::Task<int>> tasks;
  for (int i = 0; i < 70; ++i) tasks.push_back(value_after(signals[i].future(), i));
  auto all = spool::when_all(std::move(tasks));
  HandPoll hand;
  EXPECT_TRUE(hand.poll(all).is_pending());
  signals[66].fire();
  EXPECT_TRUE(hand.poll(all).is_pending());
  EXPECT_EQ(signals[66].polls(), 2);
  EXPECT_EQ(signals[3].polls(), 1);
  for (int i = 69; i >= 0; --i) signals[i].fire();
  auto done = hand.poll(all);
  ASSERT_TRUE(done.is_ready());
  std::vector<int> want;
  for (int i = 0; i < 70; ++i) want.push_back(i);
  EXPECT_EQ(done.value(), want);
}

TEST(WhenAll, MovingItAfterItsFirstPollThrows) {
  Signal s;
  auto all = spool::when_all(s.future(), value(1));
  auto moved = std::move(all);  // before the first poll: fine
  HandPoll hand;
  EXPECT_TRUE(hand.poll(moved).is_pending());
  EXPECT_THROW(auto again = std::move(moved), std::logic_error);
}

}  // namespace
}  // namespace spool_comb_test
