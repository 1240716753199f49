// Stress (run under TSan): work stealing. One task spawns many children that the other
// workers must steal, and several stealers race for the same victim queue.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_sanitizer.hpp"

namespace {

using spool::Task;
using spool_rt_test::scaled;

std::uint64_t sum_steals(const spool::RuntimeMetrics& m) {
  std::uint64_t n = 0;
  for (const auto& w : m.workers) n += w.steals;
  return n;
}

std::uint64_t sum_polls(const spool::RuntimeMetrics& m) {
  std::uint64_t n = 0;
  for (const auto& w : m.workers) n += w.polls;
  return n;
}

Task<void> child(std::atomic<std::int64_t>* ran, std::latch* done) {
  ran->fetch_add(1, std::memory_order_relaxed);
  done->count_down();
  co_return;
}

// Spawns `n` children onto its worker's queue and blocks that worker until all of them ran
// elsewhere: every child is stolen. (Fewer than a local queue holds, so none overflows.)
Task<void> spawn_and_block(int n, std::atomic<std::int64_t>* ran) {
  std::latch done(n);
  for (int i = 0; i < n; ++i) (void)spool::spawn(child(ran, &done)).id();
  done.wait();
  co_return;
}

TEST(StealStress, BlockedSpawnerIsStolenFromByRacingWorkers) {
  constexpr int kRounds = scaled(300, 200);
  constexpr int kChildren = 200;
  // Four workers on two cores: up to three of them race to steal from the blocked one.
  auto rt = spool::Builder::multi_thread().worker_threads(4).lifo_slot(false).build();
  // Written by each child task on whichever worker ran it (relaxed fetch_add); read by the
  // test (seq_cst load) after the last block_on: each add precedes its count_down on the latch
  // spawn_and_block waits on, and that task's join orders it, so relaxed suffices.
  std::atomic<std::int64_t> ran{0};
  std::uint64_t steals_before = 0;
  for (int r = 0; r < kRounds; ++r) {
    spool::block_on(rt.spawn(spawn_and_block(kChildren, &ran)));
    std::uint64_t steals = sum_steals(rt.metrics());
    ASSERT_GT(steals, steals_before) << "round " << r << ": the children had to be stolen";
    steals_before = steals;
  }
  EXPECT_EQ(ran.load(), static_cast<std::int64_t>(kRounds) * kChildren);
}

Task<std::int64_t> yield_then_one(int yields) {
  for (int i = 0; i < yields; ++i) co_await spool::yield_now();
  co_return 1;
}

// Children yield a few times and spawn a grandchild, so queues keep refilling while they
// are stolen from.
Task<std::int64_t> busy_child(int yields) {
  auto grandchild = spool::spawn(yield_then_one(yields));
  co_return co_await yield_then_one(yields) + co_await grandchild;
}

Task<std::int64_t> spawn_many(std::int64_t n) {
  std::vector<spool::JoinHandle<std::int64_t>> hs;
  hs.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    hs.push_back(spool::spawn(busy_child(static_cast<int>(i % 4))));
  std::int64_t total = 0;
  for (auto& h : hs) total += co_await h;
  co_return total;
}

TEST(StealStress, OneTaskSpawnsManyChildrenOnSeveralWorkers) {
  constexpr std::int64_t kChildren = scaled(50'000, 30'000);
  for (bool lifo : {true, false}) {
    auto rt = spool::Builder::multi_thread().worker_threads(3).lifo_slot(lifo).build();
    EXPECT_EQ(spool::block_on(rt.spawn(spawn_many(kChildren))), 2 * kChildren);
    // 1 + 2 * kChildren tasks were each polled at least once.
    EXPECT_GE(sum_polls(rt.metrics()), static_cast<std::uint64_t>(1 + 2 * kChildren));
  }
}

}  // namespace
