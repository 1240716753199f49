// Shutting down a current-thread runtime while a thread drives it: the shutdown takes the
// core before it drains the queues, and nothing scheduled after the drain is lost
// or leaked.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_gate.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Builder;
using spool::JoinError;
using spool::Runtime;
using spool::Task;
using spool_rt_test::DropCounter;
using spool_rt_test::NeverReady;
using spool_rt_test::RuntimeFreed;

Task<void> yield_forever(DropCounter, std::atomic<int>* yields) {
  for (;;) {
    co_await spool::yield_now();
    spool_rt_test::bump(*yields);
  }
}

using spool_rt_test::wait_forever;

// The driving thread's root: keeps the local queue busy with yielding tasks, then waits for
// a task that only the shutdown ends. True if that task's JoinHandle reported cancellation.
Task<bool> drive_until_cancelled(std::atomic<std::int64_t>* drops, std::atomic<int>* yields) {
  for (int i = 0; i < 4; ++i) {
    auto yielder = spool::spawn(yield_forever(DropCounter(*drops), yields));
  }
  auto waiter = spool::spawn(wait_forever(DropCounter(*drops)));
  try {
    co_await waiter;
  } catch (const JoinError& e) {
    co_return e.is_cancelled();
  }
  co_return false;
}

TEST(CurrentThreadShutdown, ShutdownTakesTheDriverRoleFromAThreadInsideBlockOn) {
  RuntimeFreed freed;
  auto rt =
      std::make_unique<Runtime>(Builder::current_thread().on_thread_park(freed.probe()).build());
  std::atomic<std::int64_t> drops{0};
  std::atomic<int> yields{0};
  bool cancelled = false;
  std::thread driver([&, handle = rt->handle()] {
    cancelled = handle.block_on(drive_until_cancelled(&drops, &yields));
  });
  spool_rt_test::wait_at_least(yields, 100);  // the driver is busy with its local queue
  rt.reset();                                 // shut down from this thread, while `driver` drives
  driver.join();
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(drops.load(), 5);  // every task's frame was destroyed
  // The shutdown drained what the driver left in its queues: no notification keeps the
  // runtime alive once the driver's Handle is gone.
  EXPECT_TRUE(freed.is_freed());
}

// Drops the runtime from inside a task, on the driving thread, while another task sits in
// the thread's deferred-wake list.
Task<int> drop_runtime(std::unique_ptr<Runtime>* holder) {
  co_await spool::yield_now();
  holder->reset();
  co_return 1;
}

Task<void> drop_while_a_task_yields(std::unique_ptr<Runtime>* holder,
                                    std::atomic<std::int64_t>* drops, std::atomic<int>* yields) {
  { auto yielder = spool::spawn(yield_forever(DropCounter(*drops), yields)); }
  auto dropper = spool::spawn(drop_runtime(holder));
  try {
    co_await dropper;
  } catch (const JoinError&) {
  }
}

// Blocks the driving thread inside a poll until `release` opens, with a yielding sibling
// queued beside it.
Task<void> stall_driver(spool_rt_test::Gate* stalled, spool_rt_test::Gate* release,
                        std::atomic<std::int64_t>* drops, std::atomic<int>* yields) {
  { auto yielder = spool::spawn(yield_forever(DropCounter(*drops), yields)); }
  co_await spool::yield_now();  // the yielder runs and queues itself again
  stalled->open();
  release->wait();
}

TEST(CurrentThreadShutdown, AShutdownTimeoutThatGivesUpOnTheDriverLeaksNothing) {
  RuntimeFreed freed;
  auto rt =
      std::make_unique<Runtime>(Builder::current_thread().on_thread_park(freed.probe()).build());
  std::atomic<std::int64_t> drops{0};
  std::atomic<int> yields{0};
  spool_rt_test::Gate stalled, release;
  std::thread driver([&, handle = rt->handle()] {
    try {
      handle.block_on(stall_driver(&stalled, &release, &drops, &yields));
    } catch (const JoinError&) {
    }
  });
  stalled.wait();                                 // the thread with the core is stuck in a poll
  rt->shutdown_timeout(std::chrono::seconds(0));  // gives up waiting for the core at once
  rt.reset();
  release.open();
  driver.join();
  EXPECT_EQ(drops.load(), 1);
  freed.wait();  // that thread drained its queue when it gave the core back
}

TEST(CurrentThreadShutdown, WakesDeferredPastTheDrainAreDroppedAndTheRuntimeIsFreed) {
  RuntimeFreed freed;
  auto holder =
      std::make_unique<Runtime>(Builder::current_thread().on_thread_park(freed.probe()).build());
  std::atomic<std::int64_t> drops{0};
  std::atomic<int> yields{0};
  {
    spool::Handle handle = holder->handle();
    handle.block_on(drop_while_a_task_yields(&holder, &drops, &yields));
  }
  EXPECT_EQ(holder, nullptr);
  // The task's shutdown ran on a detached thread, which took the core once this
  // thread's block_on gave it back. Nothing keeps the runtime alive then: no notification
  // was left in a queue that no one drains.
  freed.wait();
  EXPECT_EQ(drops.load(), 1);  // the yielding task was cancelled
}

}  // namespace
