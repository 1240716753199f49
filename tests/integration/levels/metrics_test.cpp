// RuntimeMetrics::levels / channels: one entry per level and per channel, highest first, with
// each channel's name and level; polled counts exactly the polls of the channel's tasks,
// queued the tasks waiting in run queues, and each level sums its channels.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/levels.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::JoinHandle;
using spool::Level;
using spool::Task;
using spool_levels_test::channel_metrics;
using spool_levels_test::HeldWorkers;
using spool_levels_test::metrics_after;

class LevelMetricsAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  spool::Runtime four_channels() const {
    return builder().levels({Level{"ui"}, Level{"t-a", "t-b"}, Level{"bulk"}}).build();
  }
};
SPOOL_RT_INSTANTIATE_FLAVORS(LevelMetricsAnyFlavor);

TEST_P(LevelMetricsAnyFlavor, ListEveryLevelAndChannelHighestFirstWithNamesAndLevels) {
  auto rt = four_channels();
  const spool::RuntimeMetrics m = rt.metrics();
  ASSERT_EQ(m.levels.size(), 3u);
  ASSERT_EQ(m.channels.size(), 4u);
  const std::vector<std::string> names = {"ui", "t-a", "t-b", "bulk"};
  const std::vector<std::size_t> levels = {0, 1, 1, 2};
  for (std::size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(m.channels[c].name, names[c]);
    EXPECT_EQ(m.channels[c].level, levels[c]);
    EXPECT_EQ(m.channels[c].queued, 0u);
    EXPECT_EQ(m.channels[c].polled, 0u);
    EXPECT_EQ(m.channels[c].busy_time, std::chrono::nanoseconds::zero());
  }
}

TEST_P(LevelMetricsAnyFlavor, ARuntimeWithoutLevelsHasOneLevelWithTheDefaultChannel) {
  auto rt = build();
  const spool::RuntimeMetrics m = rt.metrics();
  ASSERT_EQ(m.levels.size(), 1u);
  ASSERT_EQ(m.channels.size(), 1u);
  EXPECT_EQ(m.channels[0].name, "default");
  EXPECT_EQ(m.channels[0].level, 0u);
}

Task<void> one_poll() { co_return; }

// Polled twice: it requeues itself once.
Task<void> two_polls() { co_await spool_levels_test::Requeue{}; }

TEST_P(LevelMetricsAnyFlavor, PolledCountsExactlyThePollsOfEachChannelsTasks) {
  constexpr std::uint64_t kOnce = 50, kTwice = 20;
  auto rt = four_channels();
  std::vector<JoinHandle<void>> tasks;
  for (std::uint64_t i = 0; i < kOnce; ++i)
    tasks.push_back(rt.spawn_on(rt.channel("t-b"), one_poll()));
  for (std::uint64_t i = 0; i < kTwice; ++i)
    tasks.push_back(rt.spawn_on(rt.channel("ui"), two_polls()));
  for (auto& t : tasks) wait(rt, t);
  const spool::RuntimeMetrics m = metrics_after(rt, kOnce + 2 * kTwice);
  EXPECT_EQ(channel_metrics(m, "ui").polled, 2 * kTwice);
  EXPECT_EQ(channel_metrics(m, "t-a").polled, 0u);
  EXPECT_EQ(channel_metrics(m, "t-b").polled, kOnce);
  EXPECT_EQ(channel_metrics(m, "bulk").polled, 0u);
  EXPECT_EQ(m.levels[0].polled, 2 * kTwice);
  EXPECT_EQ(m.levels[1].polled, kOnce);
  EXPECT_EQ(m.levels[2].polled, 0u);
  // Busy time: measured for the channels that ran something, zero for the others.
  EXPECT_GT(channel_metrics(m, "ui").busy_time, std::chrono::nanoseconds::zero());
  EXPECT_GT(channel_metrics(m, "t-b").busy_time, std::chrono::nanoseconds::zero());
  EXPECT_EQ(channel_metrics(m, "t-a").busy_time, std::chrono::nanoseconds::zero());
  EXPECT_EQ(channel_metrics(m, "bulk").busy_time, std::chrono::nanoseconds::zero());
  EXPECT_EQ(m.levels[1].busy_time,
            channel_metrics(m, "t-a").busy_time + channel_metrics(m, "t-b").busy_time);
  // Every poll of a worker is a poll of some channel.
  std::uint64_t worker_polls = 0;
  for (const auto& w : m.workers) worker_polls += w.polls;
  EXPECT_EQ(worker_polls, kOnce + 2 * kTwice);
}

TEST_P(LevelMetricsAnyFlavor, QueuedCountsTheTasksWaitingInEachChannel) {
  constexpr std::size_t kUi = 3, kTa = 5, kTb = 7;
  auto rt = four_channels();
  std::vector<JoinHandle<void>> tasks;
  {
    // Multi-thread: both workers held, so that the tasks stay queued.
    HeldWorkers held(rt, is_multi_thread(), rt.channel("bulk"), 2);
    for (std::size_t i = 0; i < kUi; ++i)
      tasks.push_back(rt.spawn_on(rt.channel("ui"), one_poll()));
    for (std::size_t i = 0; i < kTa; ++i)
      tasks.push_back(rt.spawn_on(rt.channel("t-a"), one_poll()));
    for (std::size_t i = 0; i < kTb; ++i)
      tasks.push_back(rt.spawn_on(rt.channel("t-b"), one_poll()));
    const spool::RuntimeMetrics m = rt.metrics();
    EXPECT_EQ(channel_metrics(m, "ui").queued, kUi);
    EXPECT_EQ(channel_metrics(m, "t-a").queued, kTa);
    EXPECT_EQ(channel_metrics(m, "t-b").queued, kTb);
    EXPECT_EQ(channel_metrics(m, "bulk").queued, 0u);  // its holders run
    EXPECT_EQ(m.levels[0].queued, kUi);
    EXPECT_EQ(m.levels[1].queued, kTa + kTb);
    EXPECT_EQ(m.levels[2].queued, 0u);
    EXPECT_EQ(m.inject_queue_depth, kUi + kTa + kTb);  // spawned from outside
    held.release();
    for (auto& t : tasks) wait(rt, t);
  }
  const spool::RuntimeMetrics m = rt.metrics();
  for (const auto& c : m.channels) EXPECT_EQ(c.queued, 0u) << c.name;
  for (const auto& l : m.levels) EXPECT_EQ(l.queued, 0u);
}

TEST_P(LevelMetricsAnyFlavor, WithoutLevelsTheDefaultChannelCountsEveryPollAndNoBusyTime) {
  constexpr std::uint64_t kTasks = 30;
  auto rt = build();
  std::vector<JoinHandle<void>> tasks;
  for (std::uint64_t i = 0; i < kTasks; ++i) tasks.push_back(rt.spawn(one_poll()));
  for (auto& t : tasks) wait(rt, t);
  const spool::RuntimeMetrics m = metrics_after(rt, kTasks);
  EXPECT_EQ(m.channels[0].polled, kTasks);
  EXPECT_EQ(m.levels[0].polled, kTasks);
  // Documented: a runtime without levels pays no clock reads, so it reports no busy time.
  EXPECT_EQ(m.channels[0].busy_time, std::chrono::nanoseconds::zero());
}

}  // namespace

namespace {

Task<void> block_in_place_once() {
  spool::block_in_place([] {});  // hands this worker's core to another thread
  co_return;
}

TEST(LevelMetrics, APollThatBlockInPlaceTookTheCoreFromIsCountedOnce) {
  // The poll ends on a thread that no longer holds the core whose counters it would write:
  // it counts where any thread may add, and metrics() sums that in.
  constexpr std::uint64_t kTasks = 100;
  auto rt = spool::Builder::multi_thread()
                .worker_threads(2)
                .levels({Level{"ui"}, Level{"t-a", "t-b"}})
                .build();
  std::vector<JoinHandle<void>> tasks;
  for (std::uint64_t i = 0; i < kTasks; ++i)
    tasks.push_back(rt.spawn_on(rt.channel("t-a"), block_in_place_once()));
  for (auto& t : tasks) rt.block_on(std::move(t));
  const spool::RuntimeMetrics m = metrics_after(rt, kTasks);
  EXPECT_EQ(channel_metrics(m, "t-a").polled, kTasks);
  EXPECT_EQ(channel_metrics(m, "ui").polled + channel_metrics(m, "t-b").polled, 0u);
  EXPECT_GT(channel_metrics(m, "t-a").busy_time, std::chrono::nanoseconds::zero());
}

}  // namespace
