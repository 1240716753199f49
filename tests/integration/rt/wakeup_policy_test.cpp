// When the multi-thread scheduler wakes a parked worker: only when there is work for it.
// A wake-up that finds nothing to do costs a futex wake and two context switches, so the
// scheduler avoids those the woken worker could only lose (see docs/scheduler.md).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <optional>
#include <thread>

#include "spool/spool.hpp"
#include "support/rt_gate.hpp"

namespace {

using spool::Task;

// Each link spawns the next from inside the runtime (into the LIFO slot); the last one
// counts `done` down.
Task<void> link(int left, std::latch* done) {
  if (left == 0) {
    done->count_down();
  } else {
    (void)spool::spawn(link(left - 1, done));
  }
  co_return;
}

Task<void> set_true(std::atomic<bool>* flag) {
  flag->store(true);
  co_return;
}
Task<void> nothing() { co_return; }

// A task spawned (or woken) by the on_thread_park hook lands in the worker's own LIFO slot
// or queue, which tells nobody: the worker must run it, not park on it (it parked, and the
// task never ran). The worker state says whether it parked after the hook's first call (it
// must not, before the task ran: it returns to its loop, runs the task, and only the next
// call parks it).
TEST(WakeupPolicy, ATaskSpawnedByTheParkHookRunsBeforeTheWorkerParks) {
  std::atomic<bool> armed{false};
  std::atomic<int> calls{0};
  std::atomic<bool> ran{false};
  std::optional<spool::Handle> handle;  // written before `armed` (seq_cst) is set
  auto rt = spool::Builder::multi_thread()
                .worker_threads(1)
                .on_thread_park([&] {
                  if (!armed.load()) return;
                  if (calls.fetch_add(1) == 0) handle->spawn(set_true(&ran)).detach();
                })
                .build();
  auto parked = [&] { return rt.metrics().workers[0].state != spool::WorkerState::kRunning; };
  spool_rt_test::spin_until(parked);  // idle: the hook's next call comes after the spawn
  handle.emplace(rt.handle());
  armed.store(true);
  rt.spawn(nothing()).detach();  // the worker runs it, then calls the hook as it parks
  spool_rt_test::spin_until([&] { return ran.load() || (calls.load() == 1 && parked()); });
  EXPECT_TRUE(ran.load()) << "the worker parked with the hook's task in its own queue";
}

// The same on a current-thread runtime, whose block_on thread parks with the hook's task
// in its own queue unless it looks there after the hook. The root waits on `release`, which
// the test gives once the task ran or the thread parked without it.
TEST(WakeupPolicy, ATaskSpawnedByTheParkHookRunsOnACurrentThreadRuntime) {
  std::atomic<int> calls{0};
  std::atomic<bool> ran{false};
  std::optional<spool::Handle> handle;  // set before the runtime's thread starts
  auto rt = spool::Builder::current_thread()
                .on_thread_park([&] {
                  if (calls.fetch_add(1) == 0) handle->spawn(set_true(&ran)).detach();
                })
                .build();
  handle.emplace(rt.handle());
  spool::Notify release;
  std::thread driver([&] {
    rt.block_on([](spool::Notify* n) -> Task<void> { co_await n->notified(); }(&release));
  });
  auto parked = [&] { return rt.metrics().workers[0].state != spool::WorkerState::kRunning; };
  spool_rt_test::spin_until([&] { return ran.load() || (calls.load() >= 1 && parked()); });
  EXPECT_TRUE(ran.load()) << "the thread parked with the hook's task in its own queue";
  release.notify_one();
  driver.join();
}

TEST(WakeupPolicy, AChainOfSpawnsWakesOneWorkerOnly) {
  // Both written by the workers' park/unpark hooks via bump() (seq_cst fetch_add +
  // notify_all); read on the test thread by wait_at_least and load (seq_cst), which pair
  // with those adds. They only count; no data is published through them.
  std::atomic<int> parked{0};
  std::atomic<int> unparked{0};
  auto rt = spool::Builder::multi_thread()
                .worker_threads(2)
                .on_thread_park([&] { spool_rt_test::bump(parked); })
                .on_thread_unpark([&] { spool_rt_test::bump(unparked); })
                .build();
  spool_rt_test::wait_at_least(parked, 2);  // both workers found nothing to do

  // One remote spawn wakes one worker. It takes the chain's head and leaves no work
  // behind, so it wakes nobody else; every later link is spawned into its LIFO slot, and
  // each LIFO task capped out of the slot goes to an empty queue, where it is that
  // worker's very next task. The other worker has nothing to steal at any point.
  constexpr int kLinks = 300;
  std::latch done(1);
  (void)rt.spawn(link(kLinks, &done));
  done.wait();
  EXPECT_EQ(unparked.load(), 1);
  const spool::RuntimeMetrics m = rt.metrics();
  EXPECT_EQ(m.workers[0].steals + m.workers[1].steals, 0u);
}

// One burst: `n` tasks asleep until one deadline, fired in one pass of the driver; the last
// to finish records how many times the workers had parked by then.
struct Burst {
  const std::chrono::steady_clock::time_point deadline;
  const int n;
  std::atomic<int>* parked;
  // Counted (seq_cst fetch_add) by each task after its sleep; the last one stores
  // parks_when_done (relaxed) before counting `all_done` down, whose wait orders it.
  std::atomic<int> finished{0};
  int parks_when_done = 0;
  std::latch all_done{1};
};

Task<void> sleeper(Burst* b) {
  co_await spool::sleep_until(b->deadline);
  if (b->finished.fetch_add(1) + 1 == b->n) {
    b->parks_when_done = b->parked->load();
    b->all_done.count_down();
  }
}

// The tasks woken in one pass of the driver go to the queue of the worker in it, which tells
// the other worker at the first wake and once more at the end, not at each wake: told at
// each, the other worker steals a few tasks, runs out and parks again before the next one, a
// futex wake every time (W9's bursts of about 1,000 timers cost some 25 parks a worker; here
// that showed as 100 to 400 parks in some runs). So the workers park only a few times until
// the burst is over: the other worker while it comes in and after its share, the worker in
// the driver after its own, and one more each time a searcher that found work tells the
// other (0 to 2 in 30 runs).
TEST(WakeupPolicy, ABurstOfTimersTellsTheOtherWorkerOnceMoreAtItsEnd) {
  std::atomic<int> parked{0};  // as in the test above
  auto rt = spool::Builder::multi_thread()
                .worker_threads(2)
                .on_thread_park([&] { spool_rt_test::bump(parked); })
                .build();
  constexpr int kTasks = 2000;
  // The deadline must come after every task is asleep: if it did not (a slow machine), the
  // burst does not count, and the next one gets twice the time.
  for (auto delay = std::chrono::milliseconds(200);; delay *= 2) {
    const std::uint64_t armed_before = rt.metrics().timers_armed;
    Burst burst{std::chrono::steady_clock::now() + delay, kTasks, &parked};
    for (int i = 0; i < kTasks; ++i) (void)rt.spawn(sleeper(&burst));
    spool_rt_test::spin_until([&] {
      const spool::RuntimeMetrics m = rt.metrics();
      return m.timers_armed - armed_before == kTasks &&
             m.workers[0].state != spool::WorkerState::kRunning &&
             m.workers[1].state != spool::WorkerState::kRunning;
    });
    const int parks_before = parked.load();
    const bool in_time = std::chrono::steady_clock::now() < burst.deadline;
    burst.all_done.wait();
    if (!in_time) continue;
    EXPECT_LE(burst.parks_when_done - parks_before, 6);
    break;
  }
}

}  // namespace
