// LocalQueue (src/scheduler/multi_thread/local_queue.hpp) with a capacity of 4, on one
// thread: order, overflow, steal, len.
#include "scheduler/multi_thread/local_queue.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

struct Item {
  int id;
};

// Records what overflows into it; refuses everything once closed.
struct Sink {
  std::vector<int> ids;
  bool closed = false;
  bool push(Item* item) {
    if (closed) return false;
    ids.push_back(item->id);
    return true;
  }
  bool push_batch(Item* const* items, std::size_t n) {
    if (closed) return false;
    for (std::size_t i = 0; i < n; ++i) ids.push_back(items[i]->id);
    return true;
  }
};

using Queue = spool::detail::LocalQueue<4, Item*, Sink>;

struct LocalQueueTest : ::testing::Test {
  Item items[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
  Sink sink;
  std::vector<int> dropped;
  void push(Queue& q, int i) {
    q.push_back_or_overflow(&items[i], sink, [this](Item* t) { dropped.push_back(t->id); });
  }
};

TEST_F(LocalQueueTest, PopsInPushOrder) {
  Queue q;
  EXPECT_TRUE(q.is_empty());
  EXPECT_EQ(q.pop(), nullptr);
  for (int i = 0; i < 3; ++i) push(q, i);
  EXPECT_EQ(q.len(), 3u);
  for (int i = 0; i < 3; ++i) {
    Item* t = q.pop();
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->id, i);
  }
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_EQ(q.len(), 0u);
}

TEST_F(LocalQueueTest, WrapsAroundTheRing) {
  Queue q;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 3; ++i) push(q, i);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(q.pop()->id, i);
  }
  EXPECT_TRUE(sink.ids.empty());
}

TEST_F(LocalQueueTest, OverflowMovesTheOldestHalfAndTheNewOneToTheSink) {
  Queue q;
  for (int i = 0; i < 4; ++i) push(q, i);
  EXPECT_EQ(q.len(), 4u);
  EXPECT_TRUE(sink.ids.empty());
  push(q, 4);  // full: items 0 and 1 (the oldest half) and 4 go to the sink
  EXPECT_EQ(sink.ids, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(q.len(), 2u);
  EXPECT_EQ(q.pop()->id, 2);
  EXPECT_EQ(q.pop()->id, 3);
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_TRUE(dropped.empty());
}

TEST_F(LocalQueueTest, OverflowIntoAClosedSinkDropsTheBatch) {
  Queue q;
  for (int i = 0; i < 4; ++i) push(q, i);
  sink.closed = true;
  push(q, 4);
  EXPECT_EQ(dropped, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(q.len(), 2u);
}

TEST_F(LocalQueueTest, PushManyAppendsInOrderBehindWhatIsQueued) {
  Queue q;
  push(q, 0);
  EXPECT_EQ(q.pop()->id, 0);  // head and tail off slot 0: the batch wraps around the ring
  push(q, 1);
  Item* batch[] = {&items[2], &items[3], &items[4]};
  q.push_back_many(batch, 3, sink, [this](Item* t) { dropped.push_back(t->id); });
  EXPECT_EQ(q.len(), 4u);
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(q.pop()->id, i);
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_TRUE(sink.ids.empty());
}

TEST_F(LocalQueueTest, PushManyOverflowsWhatDoesNotFit) {
  Queue q;
  push(q, 0);
  push(q, 1);
  Item* batch[] = {&items[2], &items[3], &items[4], &items[5]};
  // 2 and 3 fill the ring; 4 overflows with the oldest half (0, 1); 5 takes a freed slot.
  q.push_back_many(batch, 4, sink, [this](Item* t) { dropped.push_back(t->id); });
  EXPECT_EQ(sink.ids, (std::vector<int>{0, 1, 4}));
  for (int i : {2, 3, 5}) EXPECT_EQ(q.pop()->id, i);
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_TRUE(dropped.empty());
}

TEST_F(LocalQueueTest, StealTakesHalfAndReturnsOne) {
  Queue victim;
  Queue thief;
  for (int i = 0; i < 4; ++i) push(victim, i);
  Item* got = victim.steal_into(thief);  // half of 4: items 0 and 1
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->id, 1);  // the last stolen one is returned, not queued
  EXPECT_EQ(thief.len(), 1u);
  EXPECT_EQ(thief.pop()->id, 0);
  EXPECT_EQ(victim.len(), 2u);
  EXPECT_EQ(victim.pop()->id, 2);
  EXPECT_EQ(victim.pop()->id, 3);
}

TEST_F(LocalQueueTest, StealRoundsTheHalfUp) {
  Queue victim;
  Queue thief;
  for (int i = 0; i < 3; ++i) push(victim, i);
  Item* got = victim.steal_into(thief);  // 3 - 3/2 = 2 stolen
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->id, 1);
  EXPECT_EQ(thief.len(), 1u);
  EXPECT_EQ(victim.len(), 1u);
  push(victim, 5);
  got = victim.steal_into(thief);
  EXPECT_EQ(victim.len(), 1u);  // 2 - 2/2 = 1 stolen, and returned
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->id, 2);
}

TEST_F(LocalQueueTest, StealFromAnEmptyQueueTakesNothing) {
  Queue victim;
  Queue thief;
  EXPECT_EQ(victim.steal_into(thief), nullptr);
  push(victim, 0);
  EXPECT_EQ(victim.steal_into(thief)->id, 0);  // a single item is stolen and returned
  EXPECT_TRUE(victim.is_empty());
  EXPECT_TRUE(thief.is_empty());
}

TEST_F(LocalQueueTest, StealRefusedWhenTheThiefHasNoRoomForHalf) {
  Queue victim;
  Queue thief;
  for (int i = 0; i < 4; ++i) push(victim, i);
  for (int i = 4; i < 7; ++i) push(thief, i);  // 3 queued > capacity / 2
  EXPECT_EQ(victim.steal_into(thief), nullptr);
  EXPECT_EQ(victim.len(), 4u);
}

}  // namespace
