// A task woken after a pending poll returns to the channel it came from (DESIGN §3), whoever
// wakes it: a task of another level, a thread outside the runtime, or the task itself (a
// yield). Checked two ways: the woken high-level task runs ahead of low-level tasks queued
// before the wake-up, and the runtime counts its polls on its own channel.
#include <gtest/gtest.h>

#include <cstdint>
#include <latch>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/levels.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::JoinHandle;
using spool::Level;
using spool::Task;
using spool_levels_test::channel_metrics;
using spool_levels_test::HeldWorkers;
using spool_levels_test::metrics_after;
using spool_levels_test::note;
using spool_levels_test::Record;
using spool_levels_test::show;
using spool_rt_test::ManualLeaf;

constexpr int kLows = 8;

class WokenChannelAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  spool::Runtime two_levels() const {
    return builder(1).levels({Level{"high"}, Level{"low"}}).build();
  }
};
SPOOL_RT_INSTANTIATE_FLAVORS(WokenChannelAnyFlavor);

Task<void> wait_for_notify(spool::Notify* notify, std::latch* waiting, Record* record) {
  waiting->count_down();
  co_await notify->notified();  // pending: nothing notified yet
  record->add("high resumed");
}

// Queues kLows low-level tasks (from inside the runtime: into this thread's own queues, where
// a wrongly requeued task would land too), then wakes the waiter.
Task<void> spawn_lows_then_notify(spool::Notify* notify, Record* record,
                                  std::vector<JoinHandle<void>>* spawned) {
  for (int i = 0; i < kLows; ++i)
    spawned->push_back(spool::spawn(note(record, "L" + std::to_string(i))));
  notify->notify_one();
  record->add("waker");
  co_return;
}

TEST_P(WokenChannelAnyFlavor, AHighLevelTaskWokenByALowLevelTaskRunsBeforeQueuedLowLevelTasks) {
  auto rt = two_levels();
  const spool::ChannelId high = rt.channel("high"), low = rt.channel("low");
  spool::Notify notify;
  Record record;
  std::latch waiting(1);
  auto waiter = rt.spawn_on(high, wait_for_notify(&notify, &waiting, &record));
  // Its first poll ends (pending) before this one thread runs anything else.
  until_done(rt, waiting);
  std::vector<JoinHandle<void>> spawned;  // written by the waker, read after it is joined
  wait(rt, rt.spawn_on(low, spawn_lows_then_notify(&notify, &record, &spawned)));
  for (auto& t : spawned) wait(rt, t);
  wait(rt, waiter);
  const std::vector<std::string> events = record.events();
  ASSERT_EQ(events.size(), 2u + kLows);
  EXPECT_EQ(events[0], "waker") << show(events);
  EXPECT_EQ(events[1], "high resumed") << show(events);
  // Two polls of the waiter (pending, then ready), both counted on its channel.
  const spool::RuntimeMetrics m = metrics_after(rt, 2 + 1 + kLows);
  EXPECT_EQ(channel_metrics(m, "high").polled, 2u);
  EXPECT_EQ(channel_metrics(m, "low").polled, 1u + kLows);
}

Task<void> await_leaf(ManualLeaf leaf, Record* record) {
  co_await leaf;
  record->add("high resumed");
}

TEST_P(WokenChannelAnyFlavor, AHighLevelTaskWokenFromOutsideRunsBeforeQueuedLowLevelTasks) {
  auto rt = two_levels();
  const spool::ChannelId high = rt.channel("high"), low = rt.channel("low");
  ManualLeaf leaf;
  Record record;
  auto waiter = rt.spawn_on(high, await_leaf(leaf, &record));
  until_pending(rt, leaf);
  std::vector<JoinHandle<void>> tasks;
  std::uint64_t holders = 0;
  {
    HeldWorkers held(rt, is_multi_thread(), low, 1);
    holders = held.count();
    for (int i = 0; i < kLows; ++i)
      tasks.push_back(rt.spawn_on(low, note(&record, "L" + std::to_string(i))));
    leaf.fire();  // from this thread, outside the runtime, after the low-level tasks queued
    held.release();
    for (auto& t : tasks) wait(rt, t);
    wait(rt, waiter);
  }
  const std::vector<std::string> events = record.events();
  ASSERT_EQ(events.size(), 1u + kLows);
  EXPECT_EQ(events[0], "high resumed") << show(events);
  const spool::RuntimeMetrics m = metrics_after(rt, 2 + holders + kLows);
  EXPECT_EQ(channel_metrics(m, "high").polled, 2u);
  EXPECT_EQ(channel_metrics(m, "low").polled, holders + kLows);
}

// Wakes itself (Requeue) between polls: each time it goes back to the high channel, so it
// keeps running ahead of the queued low-level tasks.
Task<void> requeue_twice(Record* record) {
  record->add("H0");
  co_await spool_levels_test::Requeue{};
  record->add("H1");
  co_await spool_levels_test::Requeue{};
  record->add("H2");
}

// Queues kLows low-level tasks and then the high-level task, all from inside the runtime.
Task<void> spawn_lows_then_high(spool::ChannelId high, Record* record,
                                std::vector<JoinHandle<void>>* spawned) {
  for (int i = 0; i < kLows; ++i)
    spawned->push_back(spool::spawn(note(record, "L" + std::to_string(i))));
  spawned->push_back(spool::spawn_on(high, requeue_twice(record)));
  co_return;
}

TEST_P(WokenChannelAnyFlavor, AHighLevelTaskThatWakesItselfKeepsRunningBeforeLowLevelTasks) {
  auto rt = two_levels();
  Record record;
  std::vector<JoinHandle<void>> spawned;  // written by the spawner, read after it is joined
  wait(rt,
       rt.spawn_on(rt.channel("low"), spawn_lows_then_high(rt.channel("high"), &record, &spawned)));
  for (auto& t : spawned) wait(rt, t);
  const std::vector<std::string> events = record.events();
  ASSERT_EQ(events.size(), 3u + kLows);
  EXPECT_EQ(std::vector<std::string>(events.begin(), events.begin() + 3),
            (std::vector<std::string>{"H0", "H1", "H2"}))
      << show(events);
}

// yield_now defers the wake-up until the thread ran the rest of its queue: the task is polled
// again later, but still on its own channel.
Task<void> yield_three_times() {
  for (int i = 0; i < 3; ++i) co_await spool::yield_now();
}

TEST_P(WokenChannelAnyFlavor, ATaskThatYieldsIsPolledAgainOnItsOwnChannel) {
  auto rt = two_levels();
  const spool::ChannelId high = rt.channel("high"), low = rt.channel("low");
  Record record;
  std::vector<JoinHandle<void>> tasks;
  for (int i = 0; i < kLows; ++i)
    tasks.push_back(rt.spawn_on(low, note(&record, "L" + std::to_string(i))));
  tasks.push_back(rt.spawn_on(high, yield_three_times()));
  for (auto& t : tasks) wait(rt, t);
  const spool::RuntimeMetrics m = metrics_after(rt, 4 + kLows);
  EXPECT_EQ(channel_metrics(m, "high").polled, 4u);  // the first poll and three after yields
  EXPECT_EQ(channel_metrics(m, "low").polled, static_cast<std::uint64_t>(kLows));
}

}  // namespace
