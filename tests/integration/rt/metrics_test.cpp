// Metrics: per-worker polls, steals, parks and state, inject-queue depth, blocking threads, live
// tasks, and dump() naming what a pending task waits on. What both runtime flavours count
// alike runs on both (MetricsAnyFlavor.<test>/MultiThread and .../CurrentThread).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_gate.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Task;
using spool_rt_test::Gate;
using spool_rt_test::ManualLeaf;

using spool_rt_test::value;

Task<void> occupy_worker(std::latch* started, const Gate* gate) {
  started->count_down();
  gate->wait();
  co_return;
}

Task<void> count_down(std::latch* done) {
  done->count_down();
  co_return;
}

// Spawns `n` children onto its own worker's queue, then blocks that worker until all of
// them ran: they can only run on the other worker, which must steal them.
Task<void> spawn_then_block(int n, std::latch* done) {
  for (int i = 0; i < n; ++i) spool::spawn(count_down(done)).id();
  done->wait();
  co_return;
}

using spool_rt_test::await_leaf;

std::uint64_t total_polls(const spool::RuntimeMetrics& m) {
  std::uint64_t n = 0;
  for (const auto& w : m.workers) n += w.polls;
  return n;
}

class MetricsAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  // Entries in RuntimeMetrics::workers: one per worker, or the one driver of a current-thread
  // runtime.
  std::size_t workers(std::size_t multi_thread_workers) const {
    return is_multi_thread() ? multi_thread_workers : 1;
  }
};
SPOOL_RT_INSTANTIATE_FLAVORS(MetricsAnyFlavor);

TEST_P(MetricsAnyFlavor, OneEntryPerWorker) {
  auto rt = build(3);
  EXPECT_EQ(rt.metrics().workers.size(), workers(3));
}

TEST_P(MetricsAnyFlavor, PollsIncreaseAsTasksRun) {
  auto rt = build(2);
  std::uint64_t before = total_polls(rt.metrics());
  constexpr int kTasks = 100;
  std::vector<spool::JoinHandle<int>> hs;
  for (int i = 0; i < kTasks; ++i) hs.push_back(rt.spawn(value(i)));
  for (auto& h : hs) (void)wait(rt, h);
  // Each task was polled at least once; its poll was counted before it ran.
  EXPECT_GE(total_polls(rt.metrics()), before + kTasks);
}

TEST_P(MetricsAnyFlavor, PollsCountEachPollOfOneWorker) {
  auto rt = build(1);
  ManualLeaf leaf;
  auto h = rt.spawn(await_leaf(leaf));
  until_pending(rt, leaf);
  leaf.fire();
  wait(rt, h);
  EXPECT_GE(rt.metrics().workers[0].polls, 2u);  // the pending poll and the completing one
}

TEST(Metrics, CurrentThreadPollsIncrease) {
  auto rt = spool::Builder::current_thread().build();
  EXPECT_EQ(rt.metrics().workers[0].polls, 0u);
  auto a = rt.spawn(value(1));
  auto b = rt.spawn(value(2));
  EXPECT_EQ(rt.block_on(a) + rt.block_on(b), 3);
  EXPECT_EQ(rt.metrics().workers[0].polls, 2u);
}

TEST(Metrics, StealsAreCountedWhenAnotherWorkerTakesQueuedTasks) {
  // No LIFO slot, so every child goes to the spawning worker's local queue (fewer than it
  // holds, so none overflows to the inject queue): the other worker can only steal them.
  auto rt = spool::Builder::multi_thread().worker_threads(2).lifo_slot(false).build();
  constexpr int kChildren = 200;
  std::latch done(kChildren);
  auto h = rt.spawn(spawn_then_block(kChildren, &done));
  spool::block_on(h);
  spool::RuntimeMetrics m = rt.metrics();
  std::uint64_t steals = 0;
  for (const auto& w : m.workers) steals += w.steals;
  EXPECT_GT(steals, 0u);
  EXPECT_GE(total_polls(m), static_cast<std::uint64_t>(kChildren + 1));
}

TEST(Metrics, ParksAreCountedAfterIdling) {
  // Written by the worker's on_thread_park hook via bump() (seq_cst fetch_add + notify_all);
  // read by wait_at_least on the test thread (seq_cst load/wait), which pairs with that add.
  // seq_cst is more than enough: it only signals that the worker parked, and publishes no data.
  std::atomic<int> parked{0};
  auto rt = spool::Builder::multi_thread()
                .worker_threads(1)
                .on_thread_park([&] { spool_rt_test::bump(parked); })
                .build();
  spool_rt_test::wait_at_least(parked, 1);  // the worker found nothing to do
  // The worker counts the park before it parks, and can only run this task after that.
  EXPECT_EQ(spool::block_on(rt.spawn(value(1))), 1);
  EXPECT_GE(rt.metrics().workers[0].parks, 1u);
}

TEST(Metrics, EachWorkerSaysWhetherItRunsParksOrWaitsInTheDriver) {
  using spool::WorkerState;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  // Idle: one of the two parks in the driver, the other on its own.
  for (;;) {
    auto w = rt.metrics().workers;
    if ((w[0].state == WorkerState::kInDriver && w[1].state == WorkerState::kParked) ||
        (w[0].state == WorkerState::kParked && w[1].state == WorkerState::kInDriver)) {
      break;
    }
    std::this_thread::yield();
  }
  // A task that blocks its worker: that one runs (from before the task started), and the
  // other, once it looked for work and found none, parks again.
  std::latch started(1);
  Gate gate;
  auto h = rt.spawn(occupy_worker(&started, &gate));
  started.wait();
  for (;;) {
    auto w = rt.metrics().workers;
    const int running =
        (w[0].state == WorkerState::kRunning) + (w[1].state == WorkerState::kRunning);
    ASSERT_GE(running, 1) << "the worker blocked in a poll says it runs";
    if (running == 1) break;
    std::this_thread::yield();
  }
  gate.open();
  spool::block_on(std::move(h));
}

TEST(Metrics, ACurrentThreadRuntimeRunsOnlyWhileAThreadDrivesIt) {
  auto rt = spool::Builder::current_thread().build();
  EXPECT_EQ(rt.metrics().workers[0].state, spool::WorkerState::kParked);
  const spool::WorkerState inside = rt.block_on([](spool::Runtime& r) -> Task<spool::WorkerState> {
    co_return r.metrics().workers[0].state;
  }(rt));
  EXPECT_EQ(inside, spool::WorkerState::kRunning);
  EXPECT_EQ(rt.metrics().workers[0].state, spool::WorkerState::kParked);
}

TEST(Metrics, CurrentThreadParksAreCounted) {
  // Written by the driver's on_thread_park hook via bump() (seq_cst fetch_add + notify_all);
  // read by wait_at_least on the firer thread (seq_cst load/wait), which pairs with that add.
  // seq_cst is more than enough: it only signals that the driver parked, and publishes no data.
  std::atomic<int> parked{0};
  auto rt =
      spool::Builder::current_thread().on_thread_park([&] { spool_rt_test::bump(parked); }).build();
  ManualLeaf leaf;
  // The root waits on a leaf that another thread fires only once the driver has parked.
  std::thread firer([&] {
    spool_rt_test::wait_at_least(parked, 1);
    leaf.fire();
  });
  rt.block_on(leaf);
  firer.join();
  EXPECT_GE(rt.metrics().workers[0].parks, 1u);
}

TEST(Metrics, InjectQueueDepthOfACurrentThreadRuntime) {
  auto rt = spool::Builder::current_thread().build();
  std::vector<spool::JoinHandle<int>> hs;
  for (int i = 0; i < 5; ++i) hs.push_back(rt.spawn(value(i)));
  spool::RuntimeMetrics m = rt.metrics();
  EXPECT_EQ(m.inject_queue_depth, 5u);
  EXPECT_EQ(m.live_tasks, 5u);
  for (auto& h : hs) (void)rt.block_on(h);
  m = rt.metrics();
  EXPECT_EQ(m.inject_queue_depth, 0u);
  EXPECT_EQ(m.live_tasks, 0u);
}

TEST(Metrics, InjectQueueDepthOfABusyMultiThreadRuntime) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  std::latch started(1);
  Gate gate;
  auto blocker = rt.spawn(occupy_worker(&started, &gate));
  started.wait();  // the only worker is blocked: nothing takes from the inject queue
  std::vector<spool::JoinHandle<int>> hs;
  for (int i = 0; i < 3; ++i) hs.push_back(rt.spawn(value(i)));
  EXPECT_EQ(rt.metrics().inject_queue_depth, 3u);
  EXPECT_EQ(rt.metrics().live_tasks, 4u);
  gate.open();
  for (auto& h : hs) (void)spool::block_on(h);
  spool::block_on(blocker);
  EXPECT_EQ(rt.metrics().inject_queue_depth, 0u);
}

TEST_P(MetricsAnyFlavor, BlockingThreadsAreCounted) {
  auto rt = build(1);
  EXPECT_EQ(rt.metrics().blocking_threads, 0u);
  Gate gate;
  std::latch entered(1);
  auto h = rt.spawn_blocking([&] {
    entered.count_down();
    gate.wait();
    return 1;
  });
  entered.wait();
  spool::RuntimeMetrics m = rt.metrics();
  EXPECT_EQ(m.blocking_threads, 1u);
  EXPECT_EQ(m.idle_blocking_threads, 0u);
  EXPECT_EQ(m.blocking_queue_depth, 0u);
  gate.open();
  EXPECT_EQ(wait(rt, h), 1);
}

// On a current-thread runtime the test thread drives the tasks (inside wait) while the
// reader thread reads.
TEST_P(MetricsAnyFlavor, ReadableWhileTasksRun) {
  auto rt = build(2);
  const std::size_t entries = workers(2);
  constexpr int kTasks = 2'000;
  // Written by the test thread once every task finished (seq_cst store); read by the reader
  // thread's loop (seq_cst load), which pairs with it. It only ends the loop (relaxed would do).
  std::atomic<bool> stop{false};
  std::thread reader([&rt, &stop, entries] {
    std::uint64_t last = 0;
    while (!stop.load()) {
      spool::RuntimeMetrics m = rt.metrics();
      std::uint64_t polls = total_polls(m);
      EXPECT_GE(polls, last) << "poll counters only grow";
      last = polls;
      EXPECT_EQ(m.workers.size(), entries);
    }
  });
  std::vector<spool::JoinHandle<int>> hs;
  for (int i = 0; i < kTasks; ++i) hs.push_back(rt.spawn(value(i)));
  long sum = 0;
  for (auto& h : hs) sum += wait(rt, h);
  stop.store(true);
  reader.join();
  EXPECT_EQ(sum, static_cast<long>(kTasks) * (kTasks - 1) / 2);
}

TEST_P(MetricsAnyFlavor, DumpListsAPendingTaskAndTheLeafItWaitsOn) {
  auto rt = build(1);
  ManualLeaf leaf;
  auto h = rt.spawn(await_leaf(leaf));
  until_pending(rt, leaf);
  // One worker (or the one driver): once another task ran, the pending task's poll has fully
  // ended (and the runtime recorded what it waits on).
  EXPECT_EQ(wait(rt, rt.spawn(value(0))), 0);
  std::string dump = rt.dump();
  std::string line_start = "task " + std::to_string(h.id()) + " [default]: ";
  auto pos = dump.find(line_start);
  ASSERT_NE(pos, std::string::npos) << dump;
  std::string line = dump.substr(pos, dump.find('\n', pos) - pos);
  EXPECT_NE(line.find("idle"), std::string::npos) << line;
  EXPECT_NE(line.find("waiting on spool_rt_test::ManualLeaf"), std::string::npos) << line;
  leaf.fire();
  wait(rt, h);
}

TEST(Metrics, DumpCountsLiveTasks) {
  auto rt = spool::Builder::current_thread().build();
  auto a = rt.spawn(value(1));
  auto b = rt.spawn(value(2));
  std::string dump = rt.dump();
  EXPECT_EQ(dump.rfind("2 live task(s)", 0), 0u) << dump;
  EXPECT_NE(dump.find("task " + std::to_string(a.id()) + " [default]: scheduled"),
            std::string::npos);
  EXPECT_NE(dump.find("task " + std::to_string(b.id()) + " [default]: scheduled"),
            std::string::npos);
  (void)rt.block_on(a);
  (void)rt.block_on(b);
  EXPECT_EQ(rt.dump().rfind("0 live task(s)", 0), 0u);
}

}  // namespace
