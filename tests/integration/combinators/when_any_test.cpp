// when_any / select: the winner's index and value, the losers destroyed before it returns,
// the winner's exception, per-child wakers, nesting, a child waker that outlives the
// combinator, and the nested contexts' reactor slot (block_on parks in a child's reactor).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"
#include "support/counting_waker.hpp"
#include "support/eventfd_reactor.hpp"
#include "support/futures.hpp"
#include "support/sync.hpp"

namespace spool_comb_test {
namespace {

using namespace std::chrono_literals;

TEST(WhenAny, GivesTheWinnersIndexAndValue) {
  Signal never;
  auto any = spool::when_any(never.future(), ReadyFuture<std::string>("won"), value(3));
  auto won = spool::block_on(std::move(any));
  ASSERT_EQ(won.index(), 1u);  // the first ready child in argument order
  EXPECT_EQ(std::get<1>(won), "won");
}

TEST(WhenAny, SelectIsTheSameFuture) {
  Signal never;
  auto sel = spool::select(never.future(), value(4));
  static_assert(std::is_same_v<decltype(sel), decltype(spool::when_any(never.future(), value(4)))>);
  auto won = spool::block_on(std::move(sel));
  ASSERT_EQ(won.index(), 1u);
  EXPECT_EQ(std::get<1>(won), 4);
}

TEST(WhenAny, DestroysTheLosersBeforeItReturns) {
  Counts loser_a, winner, loser_b;
  Signal a, w, b;
  auto any = spool::when_any(Tracked(a.future(), loser_a), Tracked(w.future(), winner),
                             Tracked(b.future(), loser_b));
  HandPoll hand;
  EXPECT_TRUE(hand.poll(any).is_pending());
  w.fire();
  auto won = hand.poll(any);
  ASSERT_TRUE(won.is_ready());
  EXPECT_EQ(won.value().index(), 1u);
  EXPECT_EQ(loser_a.drops.load(), 1);
  EXPECT_EQ(loser_b.drops.load(), 1);
  EXPECT_EQ(winner.drops.load(), 1);
  EXPECT_EQ(loser_a.polls.load(), 1);  // polled once (the first poll), never again
  EXPECT_EQ(winner.polls.load(), 2);
  EXPECT_THROW((void)hand.poll(any), std::logic_error);
}

TEST(WhenAny, RepollsOnlyTheChildThatWasWoken) {
  std::vector<Signal> signals(3);
  std::vector<spool::Task<int>> tasks;
  for (int i = 0; i < 3; ++i) tasks.push_back(value_after(signals[i].future(), i * 10));
  auto any = spool::when_any(std::move(tasks));
  HandPoll hand;
  EXPECT_TRUE(hand.poll(any).is_pending());
  signals[2].fire();
  EXPECT_EQ(hand.wakes(), 1);
  auto won = hand.poll(any);
  ASSERT_TRUE(won.is_ready());
  EXPECT_EQ(won.value().index, 2u);
  EXPECT_EQ(won.value().value, 20);
  EXPECT_EQ(signals[0].polls(), 1);
  EXPECT_EQ(signals[1].polls(), 1);
  EXPECT_EQ(signals[2].polls(), 2);
}

TEST(WhenAny, OfAnEmptyVectorThrows) {
  auto any = spool::when_any(std::vector<spool::Task<int>>{});
  EXPECT_THROW(spool::block_on(any), std::invalid_argument);
}

TEST(WhenAny, TheWinnersExceptionPropagatesAfterTheLosersAreDestroyed) {
  Counts loser;
  Signal never, fail;
  auto any = spool::when_any(Tracked(never.future(), loser),
                             spool_comb_test::throw_after(fail.future(), "winner failed"));
  HandPoll hand;
  EXPECT_TRUE(hand.poll(any).is_pending());
  fail.fire();
  EXPECT_EQ(what_thrown<std::runtime_error>([&] { (void)hand.poll(any); }), "winner failed");
  EXPECT_EQ(loser.drops.load(), 1);  // destroyed before the exception left poll
}

TEST(WhenAny, NestsWithWhenAll) {
  Signal s1, s2, s3;
  // when_any( when_all(s1, s2), s3 ): the inner when_all wins once both its children are ready.
  auto inner = spool::when_all(value_after(s1.future(), 1), value_after(s2.future(), 2));
  auto any = spool::when_any(std::move(inner), value_after(s3.future(), 3));
  // when_all( when_any(...), ready ): a combinator is a future like any other.
  auto outer = spool::when_all(std::move(any), value(4));
  HandPoll hand;
  EXPECT_TRUE(hand.poll(outer).is_pending());
  s1.fire();
  EXPECT_EQ(hand.wakes(), 1);  // through two levels of child wakers
  EXPECT_TRUE(hand.poll(outer).is_pending());
  EXPECT_EQ(s1.polls(), 2);
  EXPECT_EQ(s3.polls(), 1);  // not woken: not polled again
  s2.fire();
  auto done = hand.poll(outer);
  ASSERT_TRUE(done.is_ready());
  auto& [won, four] = done.value();
  ASSERT_EQ(won.index(), 0u);
  EXPECT_EQ(std::get<0>(won), std::make_tuple(1, 2));
  EXPECT_EQ(four, 4);
}

// A child that keeps a clone of its waker beyond the combinator's life (as a leaf that gave
// it to a timer or another thread would): waking and dropping it afterwards is safe (ASan),
// wakes nobody (the combinator let its parent's waker go), and the block of child wakers is
// freed with the last clone (LSan).
TEST(WhenAny, AChildWakerMayOutliveTheCombinator) {
  HandPoll hand;
  std::optional<Waker> kept;
  {
    Signal s;
    auto keeps_clone = spool::poll_fn([&kept](Context& cx) -> Poll<int> {
      kept.emplace(cx.waker());
      return spool::pending;
    });
    auto any = spool::when_any(std::move(keeps_clone), s.future());
    EXPECT_TRUE(hand.poll(any).is_pending());
    s.fire();
    EXPECT_EQ(hand.poll(any).value().index(), 1u);
  }
  // The combinator let its clone of the parent's waker go.
  EXPECT_EQ(hand.live_wakers(), 0);
  const int wakes = hand.wakes();
  ASSERT_TRUE(kept.has_value());
  std::thread waker_thread([&kept] {
    kept->wake_by_ref();
    std::move(*kept).wake();
  });
  waker_thread.join();
  kept.reset();
  EXPECT_EQ(hand.wakes(), wakes);
}

TEST(WhenAny, MovingItAfterItsFirstPollThrows) {
  Signal s;
  auto any = spool::when_any(s.future());
  HandPoll hand;
  EXPECT_TRUE(hand.poll(any).is_pending());
  EXPECT_THROW(auto moved = std::move(any), std::logic_error);
}

// A child polled through a nested context installs its reactor in block_on's slot, so
// block_on parks in it (parks() counts that) and the child's wake unparks it.
TEST(WhenAnyNestedContext, BlockOnParksInTheReactorAChildInstalled) {
  auto reactor = std::make_shared<spool_test::EventfdReactor>();
  Signal s, never;
  auto child = spool_test::WithReactor(reactor, s.future());
  std::thread firer([&] {
    spool_test::spin_until([&] { return reactor->parks() >= 1; });
    s.fire();
  });
  auto won = spool::block_on(spool::when_any(never.future(), std::move(child)));
  firer.join();
  EXPECT_EQ(won.index(), 1u);
  EXPECT_GE(reactor->parks(), 1);
}

// The other way: a child sees the reactor installed in the parent's slot.
TEST(WhenAnyNestedContext, AChildSeesTheParentsReactorSlot) {
  auto reactor = std::make_shared<spool_test::EventfdReactor>();
  spool::ReactorSlot slot;
  ASSERT_TRUE(slot.install(reactor));
  spool::ReactorHook* seen = nullptr;
  auto child = spool::poll_fn([&seen](Context& cx) -> Poll<void> {
    seen = cx.reactor();
    return Poll<void>::ready();
  });
  auto any = spool::when_any(std::move(child));
  Waker w = Waker::noop();
  Context cx(w, &slot);
  EXPECT_TRUE(any.poll(cx).is_ready());
  EXPECT_EQ(seen, reactor.get());
}

// A spool timer inside when_any under spool::block_on: the time driver is installed through
// the nested context, and the sleep completes.
TEST(WhenAnyNestedContext, ASleepWinsUnderBlockOn) {
  Signal never;
  auto won = spool::block_on(spool::when_any(never.future(), spool::sleep(1ms)));
  EXPECT_EQ(won.index(), 1u);
}

}  // namespace
}  // namespace spool_comb_test
