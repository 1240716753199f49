// Task times (Builder::measure_task_times, TaskSnapshot::times): busy, scheduled and idle
// time, the longest poll and the poll histogram. Each figure is checked against a period the
// test makes last kSpin, and the runtime must count at least kAtLeast of it (a bound that holds
// by construction, with room for the clock's rate, not a threshold on how fast anything runs).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::Task;
using spool::TaskSnapshot;
using spool::TaskTimes;
using spool_rt_test::ManualLeaf;
using namespace std::chrono_literals;

// Each period the test makes lasts kSpin; the runtime must count at least kAtLeast of it (its
// clock's rate against steady_clock is measured, good to about 1e-4: src/task/task_clock.hpp).
constexpr std::chrono::nanoseconds kAtLeast = 2ms;
constexpr std::chrono::nanoseconds kSpin = 2100us;

// Keeps the calling thread busy until `d` has passed.
void spin_for(std::chrono::nanoseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// One poll of at least kSpin, then waits on `leaf`.
Task<void> spins_then_waits(ManualLeaf leaf) {
  spin_for(kSpin);
  co_await leaf;
}

Task<void> waits_twice(ManualLeaf first, ManualLeaf second) {
  co_await first;
  co_await second;
}

// `id`'s snapshot once its poll has ended (it is idle): a worker may still be finishing the
// poll that made the leaf pending.
TaskSnapshot idle_snapshot(spool::Runtime& rt, std::uint64_t id) {
  for (;;) {
    for (TaskSnapshot& s : rt.tasks()) {
      if (s.id == id && s.state == TaskSnapshot::State::kIdle) return std::move(s);
    }
    std::this_thread::yield();
  }
}

class TaskTimesAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(TaskTimesAnyFlavor);

TEST_P(TaskTimesAnyFlavor, APollCountsAsBusyTimeAndInTheHistogram) {
  auto rt = builder().measure_task_times().build();
  ManualLeaf leaf;
  auto h = rt.spawn(spins_then_waits(leaf));
  until_pending(rt, leaf);
  const TaskSnapshot s = idle_snapshot(rt, h.id());
  ASSERT_TRUE(s.times.has_value());
  EXPECT_GE(s.times->busy, kAtLeast);
  EXPECT_GE(s.times->longest_poll, kAtLeast);
  EXPECT_LE(s.times->longest_poll, s.times->busy);
  // One finished poll, counted in the bucket of its duration (the longest poll's).
  const auto& buckets = s.times->poll_histogram;
  EXPECT_EQ(std::accumulate(buckets.begin(), buckets.end(), 0u), 1u);
  EXPECT_EQ(buckets[TaskTimes::bucket_of(s.times->longest_poll)], 1u);
  h.abort();
}

TEST_P(TaskTimesAnyFlavor, IdleTimeRunsFromAPollsEndToTheWakeThatQueuesIt) {
  auto rt = builder().measure_task_times().build();
  ManualLeaf first;
  ManualLeaf second;
  auto h = rt.spawn(waits_twice(first, second));
  until_pending(rt, first);
  (void)idle_snapshot(rt, h.id());
  spin_for(kSpin);
  // Idle now: the period in progress counts.
  const TaskSnapshot waiting = idle_snapshot(rt, h.id());
  ASSERT_TRUE(waiting.times.has_value());
  EXPECT_GE(waiting.times->idle, kAtLeast);
  first.fire();
  until_pending(rt, second);
  // After the wake: the period was added when the next poll began, and stays.
  const TaskSnapshot later = idle_snapshot(rt, h.id());
  EXPECT_GE(later.times->idle, waiting.times->idle);
  EXPECT_EQ(
      std::accumulate(later.times->poll_histogram.begin(), later.times->poll_histogram.end(), 0u),
      2u);
  h.abort();
}

// The scheduled time of the one running task of `rt` (the caller), as its snapshot says.
Task<std::chrono::nanoseconds> own_scheduled_time(spool::Runtime& rt) {
  for (const TaskSnapshot& s : rt.tasks()) {
    if (s.state == TaskSnapshot::State::kRunning && s.times) co_return s.times->scheduled;
  }
  co_return std::chrono::nanoseconds(-1);
}

// Spawns own_scheduled_time, then keeps the runtime's only thread busy before it waits.
Task<std::chrono::nanoseconds> spawn_then_spin(spool::Runtime& rt) {
  auto h = rt.spawn(own_scheduled_time(rt));
  spin_for(kSpin);
  co_return co_await std::move(h);
}

// Drives a current-thread runtime until `leaf` was pending once (its task is then idle).
void drive_until_pending(spool::Runtime& rt, const ManualLeaf& leaf) {
  rt.block_on([](const ManualLeaf& l) -> Task<void> {
    while (l.pending_polls() < 1) co_await spool::yield_now();
  }(leaf));
}

// The spawned task waits in the run queue while the root keeps the only thread busy: its
// first poll reads its own snapshot, whose scheduled time covers that wait.
TEST(TaskTimes, ScheduledTimeRunsFromTheSpawnOrWakeToThePoll) {
  auto rt = spool::Builder::current_thread().measure_task_times().build();
  EXPECT_GE(rt.block_on(spawn_then_spin(rt)), kAtLeast);
}

TEST(TaskTimes, ARuntimeMeasuresNoTimesUnlessAsked) {
  if (std::getenv("SPOOL_TASK_TIMES") != nullptr) GTEST_SKIP() << "SPOOL_TASK_TIMES is set";
  for (bool measured : {false, true}) {
    auto rt = spool::Builder::current_thread().measure_task_times(measured).build();
    ManualLeaf leaf;
    auto h = rt.spawn(waits_twice(leaf, leaf));
    drive_until_pending(rt, leaf);
    const std::vector<TaskSnapshot> all = rt.tasks();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].times.has_value(), measured);
    // dump() prints them where they are measured.
    EXPECT_EQ(rt.dump().find("(busy ") != std::string::npos, measured) << rt.dump();
    h.abort();
  }
}

TEST(TaskTimes, SpoolTaskTimesInTheEnvironmentTurnsThemOn) {
  // (No other test of this process runs meanwhile: gtest runs them one at a time.)
  const char* before = std::getenv("SPOOL_TASK_TIMES");
  const std::optional<std::string> saved =
      before ? std::optional<std::string>(before) : std::nullopt;
  ASSERT_EQ(::setenv("SPOOL_TASK_TIMES", "1", 1), 0);
  auto rt = spool::Builder::current_thread().build();
  if (saved) {
    ::setenv("SPOOL_TASK_TIMES", saved->c_str(), 1);
  } else {
    ::unsetenv("SPOOL_TASK_TIMES");
  }
  ManualLeaf leaf;
  auto h = rt.spawn(waits_twice(leaf, leaf));
  drive_until_pending(rt, leaf);
  const std::vector<TaskSnapshot> all = rt.tasks();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].times.has_value());
  h.abort();
}

}  // namespace
