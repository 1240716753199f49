// Idle (src/scheduler/multi_thread/idle.hpp), on one thread: the searching limit, whom a
// notify picks, last-searcher detection.
#include "scheduler/multi_thread/idle.hpp"

#include <gtest/gtest.h>

namespace {

using spool::detail::Idle;

TEST(IdleTest, AtMostHalfTheWorkersSearch) {
  Idle four(4);
  EXPECT_TRUE(four.transition_to_searching());
  EXPECT_TRUE(four.transition_to_searching());
  EXPECT_FALSE(four.transition_to_searching());
  EXPECT_EQ(four.num_searching(), 2u);

  Idle three(3);
  EXPECT_TRUE(three.transition_to_searching());
  EXPECT_TRUE(three.transition_to_searching());
  EXPECT_FALSE(three.transition_to_searching());

  Idle one(1);
  EXPECT_TRUE(one.transition_to_searching());
  EXPECT_FALSE(one.transition_to_searching());
}

TEST(IdleTest, NotifyWithNobodyParkedPicksNobody) {
  Idle idle(2);
  EXPECT_EQ(idle.worker_to_notify(Idle::Published::kLocalQueue), std::nullopt);
}

TEST(IdleTest, NotifyPicksAParkedWorkerAndCountsItSearching) {
  Idle idle(2);
  EXPECT_FALSE(idle.transition_to_parked(1, false));
  EXPECT_TRUE(idle.is_parked(1));
  EXPECT_EQ(idle.worker_to_notify(Idle::Published::kLocalQueue), 1u);
  EXPECT_FALSE(idle.is_parked(1));
  EXPECT_EQ(idle.num_searching(), 1u);
  // Now someone searches: no one else is woken.
  EXPECT_FALSE(idle.transition_to_parked(0, false));
  EXPECT_EQ(idle.worker_to_notify(Idle::Published::kLocalQueue), std::nullopt);
  EXPECT_TRUE(idle.is_parked(0));
}

TEST(IdleTest, NotifyPicksNobodyWhileAWorkerSearches) {
  Idle idle(3);
  EXPECT_FALSE(idle.transition_to_parked(0, false));
  EXPECT_TRUE(idle.transition_to_searching());
  EXPECT_EQ(idle.worker_to_notify(Idle::Published::kLocalQueue), std::nullopt);
  EXPECT_TRUE(idle.transition_from_searching());  // it was the last searcher
  EXPECT_EQ(idle.worker_to_notify(Idle::Published::kLocalQueue), 0u);
}

TEST(IdleTest, DetectsTheLastSearcher) {
  Idle idle(4);
  ASSERT_TRUE(idle.transition_to_searching());
  ASSERT_TRUE(idle.transition_to_searching());
  EXPECT_FALSE(idle.transition_from_searching());  // one is left
  EXPECT_TRUE(idle.transition_from_searching());   // the last one
  EXPECT_EQ(idle.num_searching(), 0u);

  ASSERT_TRUE(idle.transition_to_searching());
  ASSERT_TRUE(idle.transition_to_searching());
  EXPECT_FALSE(idle.transition_to_parked(2, true));   // one searcher is left
  EXPECT_TRUE(idle.transition_to_parked(3, true));    // the last searcher parks
  EXPECT_FALSE(idle.transition_to_parked(1, false));  // not a searcher: never the last
  EXPECT_EQ(idle.num_searching(), 0u);
}

TEST(IdleTest, UnparkByIdRemovesOnlyThatWorker) {
  Idle idle(3);
  idle.transition_to_parked(0, false);
  idle.transition_to_parked(1, false);
  idle.unpark_by_id(0);
  EXPECT_FALSE(idle.is_parked(0));
  EXPECT_TRUE(idle.is_parked(1));
  idle.unpark_by_id(0);  // not parked: nothing changes
  EXPECT_TRUE(idle.is_parked(1));
  EXPECT_EQ(idle.worker_to_notify(Idle::Published::kLocalQueue), 1u);
}

}  // namespace
