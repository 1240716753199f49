// Shutdowns that cannot simply wait: a shutdown_timeout that gives up waiting for a worker
// stuck in a poll leaks nothing (the worker drains its own queues when it leaves, after the
// shutdown's drain), and a blocking call that waits for a task does not hang the shutdown
// (the tasks are cancelled before the blocking pool is waited for).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_gate.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Builder;
using spool::Task;
using spool_rt_test::DropCounter;
using spool_rt_test::Gate;
using spool_rt_test::NeverReady;

using spool_rt_test::wait_forever;
Task<void> never_started(DropCounter) { co_return; }

// Queues a sibling behind itself on its worker, then blocks that worker until `release`.
Task<void> stall_worker(Gate* stalled, Gate* release, std::atomic<std::int64_t>* drops) {
  {
    auto queued = spool::spawn(never_started(DropCounter(*drops)));  // LIFO slot of this worker
    auto waiting = spool::spawn(wait_forever(DropCounter(*drops)));  // pushes `queued` on
  }
  stalled->open();
  release->wait();
  co_return;
}

TEST(ShutdownGivesUp, AWorkerStuckPastTheDeadlineDrainsItsOwnQueuesWhenItLeaves) {
  spool_rt_test::RuntimeFreed freed;
  std::atomic<std::int64_t> drops{0};
  Gate stalled, release;
  {
    auto rt = Builder::multi_thread().worker_threads(1).on_thread_start(freed.probe()).build();
    { auto stuck = rt.spawn(stall_worker(&stalled, &release, &drops)); }
    stalled.wait();
    rt.shutdown_timeout(std::chrono::seconds(0));  // gives up on the stuck worker at once
  }
  EXPECT_EQ(drops.load(), 2);  // both siblings were cancelled by the shutdown
  release.open();
  freed.wait();  // the worker left and dropped its queue entries: the runtime is freed
}

Task<void> block_in_place_until(Gate* blocked, const Gate* release) {
  spool::block_in_place([&] {
    blocked->open();
    release->wait();
  });
  co_return;
}

// The worker thread that blocks in place gave its core away; the shutdown still waits for
// that thread (not only for the threads holding cores) and, past its deadline, says so.
TEST(ShutdownGivesUp, AThreadBlockedInPlaceWithoutItsCoreIsReportedNotJoined) {
  spool_rt_test::RuntimeFreed freed;
  Gate blocked, release;
  spool::ShutdownReport report;
  {
    auto rt = Builder::multi_thread().worker_threads(1).on_thread_start(freed.probe()).build();
    { auto stuck = rt.spawn(block_in_place_until(&blocked, &release)); }
    blocked.wait();
    std::promise<void> returned;
    std::thread guard([&release, done = returned.get_future()] {
      // Only if the shutdown waits for the blocked thread (the test then fails below).
      if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) release.open();
    });
    report = rt.shutdown_timeout(std::chrono::milliseconds(0));
    const bool released_first = release.is_open();
    returned.set_value();
    guard.join();
    EXPECT_FALSE(released_first) << "the shutdown waited for the blocked thread";
  }
  EXPECT_FALSE(report.clean());
  EXPECT_EQ(report.threads_left_in_poll, 1u) << report.left_in_poll;
  release.open();
  freed.wait();
}

// A thread stuck in a block_on's root future (no task) is reported too.
TEST(ShutdownGivesUp, AThreadStuckInABlockOnRootIsReported) {
  auto rt = Builder::current_thread().build();
  Gate spinning, release;
  std::thread other([&] {
    rt.handle().block_on(spool::poll_fn([&](spool::Context&) -> spool::Poll<void> {
      spinning.open();
      release.wait();  // never returns pending: the thread keeps the core
      return spool::Poll<void>::ready();
    }));
  });
  spinning.wait();
  const spool::ShutdownReport report = rt.shutdown_timeout(std::chrono::milliseconds(0));
  release.open();
  other.join();
  EXPECT_FALSE(report.clean());
  EXPECT_EQ(report.threads_left_in_poll, 1u);
  EXPECT_NE(report.left_in_poll.find("polls no task"), std::string::npos) << report.left_in_poll;
}

TEST(ShutdownGivesUp, ADropWhileABlockingCallWaitsForATaskDoesNotHang) {
  std::atomic<std::int64_t> drops{0};
  auto rt = std::make_unique<spool::Runtime>(Builder::multi_thread().worker_threads(1).build());
  spool::Handle handle = rt->handle();
  auto waiting = rt->spawn(wait_forever(DropCounter(drops)));
  Gate started;
  auto call = rt->spawn_blocking([&] {
    started.open();
    try {
      handle.block_on(std::move(waiting));  // ends only when the shutdown cancels the task
    } catch (const spool::JoinError& e) {
      return e.is_cancelled();
    }
    return false;
  });
  started.wait();
  rt.reset();
  EXPECT_TRUE(spool::block_on(std::move(call)));
  EXPECT_EQ(drops.load(), 1);
}

}  // namespace
