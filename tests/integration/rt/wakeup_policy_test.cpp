// When the multi-thread scheduler wakes a parked worker: only when there is work for it.
// A wake-up that finds nothing to do costs a futex wake and two context switches, so the
// scheduler avoids those the woken worker could only lose (see docs/scheduler.md).
#include <gtest/gtest.h>

#include <atomic>
#include <latch>

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

}  // namespace
