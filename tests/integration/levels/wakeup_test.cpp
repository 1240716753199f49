// A task queued from outside the runtime always finds a worker, also when levels let a worker
// skip empty levels without searching (a regression test: such a worker parked without
// re-checking the queues, and a task spawned while it went idle stayed queued for ever).
//
// A lost wake-up shows as a hang (the join never completes), which CTest's timeout turns into
// a failure; a passing run takes about a second per test (20,000 spawns, each a park and an
// unpark), and without the fix every run hung.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Level;
using spool::Task;

using spool_rt_test::value;

// Spawns one task at a time from this thread and joins it, alternating between `names`' channels:
// after each join the runtime's worker(s) go idle, and the next spawn races them towards park().
void spawn_and_join_one_at_a_time(spool::Runtime& rt, int n,
                                  std::vector<std::string> names = {"high", "low"}) {
  std::vector<spool::ChannelId> channels;
  for (const auto& name : names) channels.push_back(rt.channel(name));
  std::int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += spool::block_on(
        rt.spawn_on(channels[static_cast<std::size_t>(i) % channels.size()], value(i)));
  }
  EXPECT_EQ(sum, static_cast<std::int64_t>(n) * (n - 1) / 2);
}

// A worker calls on_thread_park after it found no work and before it counts itself parked:
// yielding the CPU there widens the window in which a spawn finds it neither running nor
// parked (the lost wake-up needed a spawn in that window).
void yield_cpu() { std::this_thread::yield(); }

TEST(LevelsWakeup, ATaskSpawnedFromOutsideAsTheOnlyWorkerGoesIdleIsRun) {
  auto rt = spool::Builder::multi_thread()
                .worker_threads(1)
                .on_thread_park(yield_cpu)
                .levels({Level{"high"}, Level{"low"}})
                .build();
  spawn_and_join_one_at_a_time(rt, 20'000);
}

TEST(LevelsWakeup, ATaskSpawnedFromOutsideAsEveryWorkerGoesIdleIsRun) {
  auto rt = spool::Builder::multi_thread()
                .worker_threads(2)
                .on_thread_park(yield_cpu)
                .levels({Level{"high"}, Level{"low"}})
                .build();
  spawn_and_join_one_at_a_time(rt, 20'000);
}

TEST(LevelsWakeup, ATaskSpawnedFromOutsideAsTheOnlyWorkerGoesIdleIsRunUnderRoundRobin) {
  using namespace std::chrono_literals;
  auto rt = spool::Builder::multi_thread()
                .worker_threads(1)
                .on_thread_park(yield_cpu)
                .levels({Level{"high"}, Level{"low"}})
                .schedule(spool::RoundRobin{{1ms, 1ms}})
                .build();
  spawn_and_join_one_at_a_time(rt, 20'000);
}

TEST(LevelsWakeup, ATaskSpawnedFromOutsideOntoTheOnlyChannelAnEarliestDeadlineFirstOneIsRun) {
  // Nobody steals from an EDF queue, so no worker ever searches here: each must re-check the
  // queues as it parks, as with levels.
  auto rt = spool::Builder::multi_thread()
                .worker_threads(2)
                .on_thread_park(yield_cpu)
                .levels({Level{spool::Channel("jobs").earliest_deadline_first()}})
                .build();
  spawn_and_join_one_at_a_time(rt, 20'000, {"jobs"});
}

}  // namespace
