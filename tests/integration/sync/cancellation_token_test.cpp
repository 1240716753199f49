// spool::CancellationToken: cancel through any copy, child tokens (cancelled with the parent,
// not the other way), cancelled() woken by a cancel from another thread, run_until_cancelled
// (the inner future destroyed when the token wins), misuse; under block_on and tasks.
#include <gtest/gtest.h>

#include <latch>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::CancellationToken;
using spool_test::HandPoller;

TEST(CancellationToken, CancelThroughACopyCancelsEveryCopy) {
  CancellationToken a;
  CancellationToken b = a;
  EXPECT_FALSE(a.is_cancelled());
  b.cancel();
  b.cancel();  // idempotent
  EXPECT_TRUE(a.is_cancelled());
  spool::block_on(a.cancelled());  // ready at once
}

TEST(CancellationToken, AWaitingFutureIsWokenByCancel) {
  CancellationToken token;
  HandPoller waiter;
  auto wait = token.cancelled();
  EXPECT_TRUE(waiter.poll(wait).is_pending());
  EXPECT_TRUE(waiter.poll(wait).is_pending());
  EXPECT_EQ(waiter.wakes(), 0);
  token.cancel();
  EXPECT_EQ(waiter.wakes(), 1);
  EXPECT_TRUE(waiter.poll(wait).is_ready());
}

// A waiting cancelled() future destroyed before the cancel leaves the token's queue: the
// cancel wakes the others, and not the dropped one.
TEST(CancellationToken, AWaitingFutureDroppedBeforeTheCancelLosesNothing) {
  CancellationToken token;
  HandPoller first, dropped, last;
  auto a = token.cancelled();
  auto c = token.cancelled();
  EXPECT_TRUE(first.poll(a).is_pending());
  {
    auto b = token.cancelled();
    EXPECT_TRUE(dropped.poll(b).is_pending());
  }
  EXPECT_EQ(dropped.live_wakers(), 0);
  EXPECT_TRUE(last.poll(c).is_pending());
  token.cancel();
  EXPECT_EQ(first.wakes(), 1);
  EXPECT_EQ(last.wakes(), 1);
  EXPECT_EQ(dropped.wakes(), 0);
  EXPECT_TRUE(first.poll(a).is_ready());
  EXPECT_TRUE(last.poll(c).is_ready());
}

TEST(CancellationToken, AFutureMadeBeforeTheCancelButNotPolledIsReady) {
  CancellationToken token;
  auto wait = token.cancelled();
  token.cancel();
  HandPoller waiter;
  EXPECT_TRUE(waiter.poll(wait).is_ready());
}

TEST(CancellationToken, ChildrenAreCancelledWithTheirParentNotTheOtherWay) {
  CancellationToken root;
  CancellationToken child = root.child_token();
  CancellationToken grandchild = child.child_token();
  CancellationToken sibling = root.child_token();
  HandPoller waiter;
  auto wait = grandchild.cancelled();
  EXPECT_TRUE(waiter.poll(wait).is_pending());

  sibling.cancel();
  EXPECT_FALSE(root.is_cancelled());
  EXPECT_FALSE(child.is_cancelled());

  root.cancel();
  EXPECT_TRUE(child.is_cancelled());
  EXPECT_TRUE(grandchild.is_cancelled());
  EXPECT_EQ(waiter.wakes(), 1);
  EXPECT_TRUE(root.child_token().is_cancelled());  // made after: cancelled at once
}

TEST(CancellationToken, AGrandchildIsReachedWhenNobodyHoldsTheTokenBetween) {
  CancellationToken root;
  CancellationToken grandchild = root.child_token().child_token();
  root.cancel();
  EXPECT_TRUE(grandchild.is_cancelled());
}

// Cancelling and destroying a chain of 10^5 tokens recurses neither way (a stack overflow
// otherwise, at once under ASan).
TEST(CancellationToken, ADeepChainIsCancelledAndFreedWithoutRecursion) {
  CancellationToken root;
  auto leaf = std::make_unique<CancellationToken>(root);
  for (int i = 0; i < 100'000; ++i) *leaf = leaf->child_token();
  root.cancel();
  EXPECT_TRUE(leaf->is_cancelled());
  leaf.reset();  // the only holder of the chain below the root
}

// A future that stays pending and counts its destruction.
struct Forever {
  std::shared_ptr<int> alive;
  spool::Poll<int> poll(spool::Context&) { return spool::pending; }
};

TEST(CancellationToken, RunUntilCancelledDestroysTheWorkWhenTheTokenWins) {
  CancellationToken token;
  auto alive = std::make_shared<int>(0);
  HandPoller runner;
  auto run = token.run_until_cancelled(Forever{alive});
  EXPECT_TRUE(runner.poll(run).is_pending());
  EXPECT_EQ(alive.use_count(), 2);
  token.cancel();
  EXPECT_EQ(runner.wakes(), 1);
  spool::Poll<std::optional<int>> p = runner.poll(run);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), std::nullopt);
  EXPECT_EQ(alive.use_count(), 1);  // destroyed before the future returned
}

spool::Task<int> answer() { co_return 42; }
spool::Task<void> nothing() { co_return; }

TEST(CancellationToken, RunUntilCancelledGivesTheValueWhenTheWorkWins) {
  CancellationToken token;
  EXPECT_EQ(spool::block_on(token.run_until_cancelled(answer())), 42);
  EXPECT_TRUE(spool::block_on(token.run_until_cancelled(nothing())));
  token.cancel();
  EXPECT_EQ(spool::block_on(token.run_until_cancelled(answer())), std::nullopt);
  EXPECT_FALSE(spool::block_on(token.run_until_cancelled(nothing())));
}

TEST(CancellationToken, AMovedFromTokenIsAClearError) {
  CancellationToken token;
  CancellationToken moved = std::move(token);
  EXPECT_THROW((void)token.is_cancelled(), std::logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(token.cancel(), std::logic_error);
  EXPECT_THROW((void)token.cancelled(), std::logic_error);
  EXPECT_FALSE(moved.is_cancelled());
}

// A waiting cancelled() future refuses to move, and both it and the target stay usable
// (the failed move used to leave the source without its state: a use after free).
TEST(CancellationToken, ARefusedMoveLeavesTheWaitingFutureIntact) {
  auto token = std::make_unique<CancellationToken>();
  auto wait = token->cancelled();
  HandPoller waiter;
  EXPECT_TRUE(waiter.poll(wait).is_pending());
  EXPECT_THROW({ auto moved = std::move(wait); }, std::logic_error);
  token.reset();  // the future's share keeps the state alive
  EXPECT_TRUE(waiter.poll(wait).is_pending());

  auto unpolled = CancellationToken().cancelled();
  auto moved = std::move(unpolled);
  EXPECT_THROW((void)waiter.poll(unpolled), std::logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(waiter.poll(moved).is_pending());
}

class CancellationTokenAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(CancellationTokenAnyFlavor);

spool::Task<int> wait_then(CancellationToken token, std::latch* waiting) {
  auto wait = token.cancelled();
  HandPoller probe;  // registers nothing with the runtime: only tells that it would wait
  if (probe.poll(wait).is_pending()) waiting->count_down();
  co_await wait;
  co_return 7;
}

// Tasks awaiting a child token are woken by the root's cancel from an outside thread.
TEST_P(CancellationTokenAnyFlavor, TasksWokenByACancelFromAnotherThread) {
  auto rt = build();
  CancellationToken root;
  std::latch waiting(3);
  std::vector<spool::JoinHandle<int>> tasks;
  for (int i = 0; i < 3; ++i) tasks.push_back(rt.spawn(wait_then(root.child_token(), &waiting)));
  std::thread canceller([&] {
    waiting.wait();
    root.cancel();
  });
  for (auto& t : tasks) EXPECT_EQ(wait(rt, std::move(t)), 7);
  canceller.join();
}

}  // namespace
