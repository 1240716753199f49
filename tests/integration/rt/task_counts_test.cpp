// Per-task counts and Runtime::tasks(): every live task, in id order, with its name, channel,
// location, state, polls and wakes (by itself, by others).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Task;
using spool::TaskSnapshot;
using spool_rt_test::ManualLeaf;

// Waits on each of `leaves` in turn (each a wake by someone else), yielding `yields` times
// before each, then on `last`, which is never fired: the task stays live for the snapshot.
Task<void> waits(std::vector<ManualLeaf> leaves, int yields, ManualLeaf last) {
  for (auto& leaf : leaves) {
    for (int i = 0; i < yields; ++i) co_await spool::yield_now();
    co_await leaf;
  }
  co_await last;
}

using spool_rt_test::find;

class TaskCountsAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(TaskCountsAnyFlavor);

// Polls, wakes by others (each leaf fired from outside) and by itself (each yield). On a
// current-thread runtime each fire comes while the task is idle, so the split is exact; on a
// multi-thread one a fire may land during the poll that registered the leaf, which then
// counts as woken while it ran (self_wakes, as documented).
TEST_P(TaskCountsAnyFlavor, PollsAndWakesByItselfAndByOthers) {
  auto rt = build();
  std::vector<ManualLeaf> leaves(3);
  ManualLeaf last;
  const int line = __LINE__ + 1;
  auto h = rt.spawn_on(rt.channel("default"), spool::named("waiter", waits(leaves, 2, last)));
  for (int i = 0; i < 3; ++i) {
    until_pending(rt, leaves[i]);
    leaves[i].fire();
  }
  // The first poll, 6 after the yields, 3 after the fires, the last one pending on `last`:
  // 10 polls, all counted once that poll began.
  until_pending(rt, last);
  auto all = rt.tasks();
  const TaskSnapshot* s = find(all, h.id());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "waiter");
  EXPECT_EQ(s->channel, "default");
  EXPECT_STREQ(s->location.file, __builtin_FILE());
  EXPECT_EQ(s->location.line, static_cast<std::uint64_t>(line));
  EXPECT_FALSE(s->cancel_requested);
  EXPECT_EQ(s->polls, 10u);
  EXPECT_EQ(s->wakes, 9u);
  if (is_multi_thread()) {
    EXPECT_GE(s->self_wakes, 6u);
    EXPECT_LE(s->self_wakes, 9u);
    EXPECT_EQ(s->self_wakes + s->wakes_by_others(), 9u);
  } else {
    EXPECT_EQ(s->self_wakes, 6u);
    EXPECT_EQ(s->wakes_by_others(), 3u);
  }
  h.abort();
}

TEST(TaskCounts, TasksListsEveryLiveTaskAndItsState) {
  auto rt = spool::Builder::current_thread().build();
  EXPECT_TRUE(rt.tasks().empty());
  ManualLeaf leaf;
  auto idle = rt.spawn(waits({}, 0, leaf));
  rt.block_on(spool::yield_now());  // polled once: now idle on the leaf
  auto queued = rt.spawn(spool::named("queued", waits({}, 0, leaf)));
  auto all = rt.tasks();
  ASSERT_EQ(all.size(), 2u);
  const TaskSnapshot* i = find(all, idle.id());
  const TaskSnapshot* q = find(all, queued.id());
  ASSERT_TRUE(i != nullptr && q != nullptr);
  EXPECT_EQ(i->state, TaskSnapshot::State::kIdle);
  EXPECT_EQ(i->polls, 1u);
  EXPECT_EQ(i->name, "");
  EXPECT_EQ(q->state, TaskSnapshot::State::kScheduled);
  EXPECT_EQ(q->polls, 0u);
  EXPECT_EQ(q->wakes, 0u);
  EXPECT_EQ(q->name, "queued");
  idle.abort();
  queued.abort();
  rt.block_on(spool::yield_now());  // the aborts run: both cancelled, gone from the list
  EXPECT_TRUE(rt.tasks().empty());
  // The dump shows the counts too.
  auto again = rt.spawn(waits({}, 0, leaf));
  rt.block_on(spool::yield_now());
  EXPECT_NE(rt.dump().find("idle, waiting on spool_rt_test::ManualLeaf, 1 waker(s), 1 poll(s)"),
            std::string::npos)
      << rt.dump();
  again.abort();
}

// The owned-task list is sharded by runs of 256 ids, two shards a run: 600 tasks spawned by
// one thread span at least three runs. tasks() lists them in id order, before and after a
// third of them leave.
TEST(TaskCounts, TasksListsManyTasksInIdOrder) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf leaf;
  std::vector<spool::JoinHandle<void>> handles;
  for (int i = 0; i < 600; ++i) handles.push_back(rt.spawn(waits({}, 0, leaf)));
  rt.block_on(spool::yield_now());  // some run and wait on the leaf, the rest stay queued
  auto ids_of = [](const std::vector<TaskSnapshot>& all) {
    std::vector<std::uint64_t> ids;
    for (const TaskSnapshot& s : all) ids.push_back(s.id);
    return ids;
  };
  std::vector<std::uint64_t> expected;
  for (const auto& h : handles) expected.push_back(h.id());
  ASSERT_TRUE(std::is_sorted(expected.begin(), expected.end()));
  EXPECT_EQ(ids_of(rt.tasks()), expected);
  std::vector<std::uint64_t> kept;
  for (std::size_t i = 0; i < handles.size(); ++i) {
    if (i % 3 == 0) {
      handles[i].abort();
    } else {
      kept.push_back(handles[i].id());
    }
  }
  auto aborted_finished = [&] {
    for (std::size_t i = 0; i < handles.size(); i += 3) {
      if (!handles[i].is_finished()) return false;
    }
    return true;
  };
  // Each round runs a batch of the queued cancels; bounded, so a lost abort fails the test.
  for (int round = 0; round < 1'000 && !aborted_finished(); ++round) {
    rt.block_on(spool::yield_now());
  }
  ASSERT_TRUE(aborted_finished());
  EXPECT_EQ(ids_of(rt.tasks()), kept);
  for (auto& h : handles) h.abort();
}

}  // namespace
