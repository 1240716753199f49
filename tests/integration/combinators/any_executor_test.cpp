// when_all and when_any on both runtime flavours: over JoinHandles (a losing one is aborted,
// and so are the siblings of one that threw), awaited inside a task, and with children woken
// from plain threads.
#include <gtest/gtest.h>

#include <latch>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"
#include "support/rt_flavor.hpp"

namespace spool_comb_test {
namespace {

class CombinatorAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(CombinatorAnyFlavor);

TEST_P(CombinatorAnyFlavor, WhenAllOfJoinHandles) {
  auto rt = build();
  auto all = spool::when_all(rt.spawn(value(1)), rt.spawn(value(2)), rt.spawn(value(3)));
  EXPECT_EQ(wait(rt, std::move(all)), std::make_tuple(1, 2, 3));
}

TEST_P(CombinatorAnyFlavor, WhenAnyAbortsTheLosingJoinHandles) {
  auto rt = build();
  std::latch dropped(2);
  auto any = spool::when_any(rt.spawn(pending_forever(LatchOnDrop(dropped))), rt.spawn(value(5)),
                             rt.spawn(pending_forever(LatchOnDrop(dropped))));
  auto won = wait(rt, std::move(any));
  ASSERT_EQ(won.index(), 1u);
  EXPECT_EQ(std::get<1>(won), 5);
  until_done(rt, dropped);  // both losers' frames destroyed: they were aborted, not detached
  EXPECT_TRUE(dropped.try_wait());
}

TEST_P(CombinatorAnyFlavor, DestroyingAnUnfinishedCombinatorAbortsItsJoinHandles) {
  auto rt = build();
  std::latch dropped(2);
  {
    auto all = spool::when_all(rt.spawn(pending_forever(LatchOnDrop(dropped))),
                               rt.spawn(pending_forever(LatchOnDrop(dropped))));
    Waker w = Waker::noop();
    Context cx(w);
    EXPECT_TRUE(all.poll(cx).is_pending());
  }
  until_done(rt, dropped);
  EXPECT_TRUE(dropped.try_wait());
}

TEST_P(CombinatorAnyFlavor, WhenAllAbortsTheSiblingsOfATaskThatThrew) {
  auto rt = build();
  std::latch dropped(1);
  ManualLeaf fail;
  auto all = spool::when_all(rt.spawn(pending_forever(LatchOnDrop(dropped))),
                             rt.spawn(spool_comb_test::throw_after(fail, "boom")));
  fail.fire();
  try {
    (void)wait(rt, std::move(all));
    ADD_FAILURE() << "when_all should have thrown";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_exception());
  }
  until_done(rt, dropped);
  EXPECT_TRUE(dropped.try_wait());
}

// Inside a task: when_any of a leaf never fired and a when_all of leaves fired from plain
// threads.
Task<int> race_in_a_task(std::vector<ManualLeaf> leaves) {
  ManualLeaf never;
  auto all = spool::when_all(value_after(leaves[0], 1), value_after(leaves[1], 2),
                             value_after(leaves[2], 3));
  auto any = spool::when_any(std::move(all), value_after(never, 0));
  auto won = co_await std::move(any);
  auto [a, b, c] = std::get<0>(won);
  co_return a + b + c;
}

TEST_P(CombinatorAnyFlavor, ChildrenWokenFromPlainThreadsInsideATask) {
  auto rt = build();
  std::vector<ManualLeaf> leaves(3);
  auto handle = rt.spawn(race_in_a_task(leaves));
  std::vector<std::thread> firers;
  for (auto& leaf : leaves) firers.emplace_back([leaf]() mutable { leaf.fire(); });
  EXPECT_EQ(wait(rt, std::move(handle)), 6);
  for (auto& t : firers) t.join();
}

}  // namespace
}  // namespace spool_comb_test
