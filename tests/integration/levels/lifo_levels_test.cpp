// The LIFO slot under levels (docs/levels.md): a task woken or spawned by a running task may
// wait in that worker's slot, where no other worker can take it, only when that cannot hold a
// higher level behind a lower one.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <vector>

#include "spool/spool.hpp"
#include "support/levels.hpp"

namespace {

using spool::Level;

spool::Task<void> yield_until(const std::atomic<bool>* stop) {
  // stop: set (release) by the test, read (acquire) here.
  while (!stop->load(std::memory_order_acquire)) co_await spool::yield_now();
}

spool::Task<void> count_down(std::latch* started) {
  started->count_down();
  co_return;
}

// Spawns a task of its own level (it inherits the channel), then blocks its worker until that
// task has started: only another worker can start it.
spool::Task<void> spawn_and_block(std::latch* started) {
  auto child = spool::spawn(count_down(started));
  started->wait();
  co_await std::move(child);
}

TEST(LifoUnderLevels, AHighTaskSpawnedByAHighTaskIsTakenByAWorkerRunningLowWork) {
  // With the child in the spawner's LIFO slot, the other worker would keep running "low" tasks
  // and the spawner would block forever.
  auto rt = spool::Builder::multi_thread()
                .worker_threads(2)
                .levels({Level{"high"}, Level{"low"}})
                .build();
  std::atomic<bool> stop{false};
  std::vector<spool::JoinHandle<void>> lows;
  for (int i = 0; i < 8; ++i) lows.push_back(rt.spawn_on(rt.channel("low"), yield_until(&stop)));
  std::latch started(1);
  rt.block_on(rt.spawn_on(rt.channel("high"), spawn_and_block(&started)));
  stop.store(true, std::memory_order_release);
  for (auto& h : lows) rt.block_on(std::move(h));
  // The spawner and the child ran on "high". A worker counts a poll once it returns, so wait
  // for that channel's own count (the low tasks' polls reach any total first).
  ASSERT_EQ(rt.metrics().channels[0].name, "high");
  spool_rt_test::spin_until([&] { return rt.metrics().channels[0].polled >= 2; });
}

}  // namespace
