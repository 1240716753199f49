// A runtime thread that cannot start (injected through sync/thread.hpp's test hook) is
// undone: nothing counts a thread that does not exist, no job waits for one, and every
// caller hears of it or carries on without it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <system_error>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_gate.hpp"
#include "support/sync.hpp"
#include "sync/thread.hpp"

namespace {

using spool::Builder;
using spool::Task;
using spool::detail::fail_thread_starts;
using spool_rt_test::DropCounter;
using spool_rt_test::Gate;

class ThreadStartFailure : public ::testing::Test {
 protected:
  ~ThreadStartFailure() override { fail_thread_starts(0, 0); }
};

TEST_F(ThreadStartFailure, BuildThrowsAndStopsTheWorkersThatDidStart) {
  fail_thread_starts(1, 1);  // the first worker starts, the second does not
  spool_rt_test::RuntimeFreed freed;
  std::string what;
  try {
    (void)Builder::multi_thread().worker_threads(2).on_thread_start(freed.probe()).build();
  } catch (const std::system_error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("could not start the runtime's worker threads"), std::string::npos) << what;
  freed.wait();  // the worker that started was stopped: nothing keeps the runtime alive
  auto rt = Builder::multi_thread().worker_threads(2).build();  // all well again
  EXPECT_EQ(rt.block_on(rt.spawn_blocking([] { return 4; })), 4);
}

TEST_F(ThreadStartFailure, SpawnBlockingWithNoThreadThrowsAndCancelsTheCall) {
  auto rt = Builder::multi_thread().worker_threads(1).build();
  std::atomic<std::int64_t> drops{0};
  std::atomic<bool> ran{false};
  fail_thread_starts(0, 1);
  EXPECT_THROW((void)rt.spawn_blocking([d = DropCounter(drops), &ran] { ran = true; }),
               std::system_error);
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(drops.load(), 1);  // the closure was destroyed, not leaked
  EXPECT_EQ(rt.metrics().blocking_threads, 0u);
  EXPECT_EQ(rt.metrics().blocking_queue_depth, 0u);
  EXPECT_EQ(rt.block_on(rt.spawn_blocking([] { return 5; })), 5);  // the pool still works
}

TEST_F(ThreadStartFailure, AJobWaitsForABusyThreadWhenNoNewOneCanStart) {
  auto rt = Builder::multi_thread().worker_threads(1).build();
  Gate release;
  auto first = rt.spawn_blocking([&release] {
    release.wait();
    return 1;
  });
  spool_rt_test::spin_until([&] { return rt.metrics().blocking_threads == 1; });
  fail_thread_starts(0, 1);
  auto second = rt.spawn_blocking([] { return 2; });  // queued for the busy thread
  EXPECT_EQ(rt.metrics().blocking_threads, 1u);
  release.open();
  EXPECT_EQ(rt.block_on(std::move(first)), 1);
  EXPECT_EQ(rt.block_on(std::move(second)), 2);
}

TEST_F(ThreadStartFailure, AbortingACallQueuedBehindABusyThreadCancelsItAtOnce) {
  auto rt = Builder::multi_thread().worker_threads(1).build();
  Gate running, release;
  auto first = rt.spawn_blocking([&running, &release] {
    running.open();
    release.wait();
    return 1;
  });
  running.wait();  // the pool's one thread is busy, and the queue empty
  fail_thread_starts(0, 1);
  std::atomic<std::int64_t> drops{0};
  std::atomic<bool> ran{false};
  auto second = rt.spawn_blocking([d = DropCounter(drops), &ran] {
    ran = true;
    return 2;
  });  // queued for the busy thread, which may never come back
  second.abort();
  // Cancelled on the spot, not when the busy thread frees up: its closure is gone already.
  EXPECT_EQ(drops.load(), 1);
  EXPECT_EQ(rt.metrics().blocking_queue_depth, 0u);
  release.open();
  try {
    (void)rt.block_on(std::move(second));
    ADD_FAILURE() << "an aborted blocking call that never started returned a value";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled()) << e.what();
  }
  EXPECT_EQ(rt.block_on(std::move(first)), 1);
  EXPECT_FALSE(ran.load());
}

Task<int> record_run(std::atomic<bool>* ran) {
  *ran = true;
  co_return 0;
}

// Spawns a sibling onto this worker, then blocks in place for a moment.
Task<int> block_in_place_beside(std::atomic<bool>* sibling_ran) {
  auto sibling = spool::spawn(record_run(sibling_ran));
  spool::block_in_place([] {});
  co_return co_await sibling;
}

TEST_F(ThreadStartFailure, BlockInPlaceNeverQueuesTheCoreBehindABusyBlockingCall) {
  auto rt = Builder::multi_thread().worker_threads(1).build();
  Gate release;
  auto busy = rt.spawn_blocking([&release] { release.wait(); });
  spool_rt_test::spin_until([&] { return rt.metrics().blocking_threads == 1; });
  fail_thread_starts(0, 1);  // no second pool thread can take the core over
  std::atomic<bool> sibling_ran{false};
  // The core stays with the worker, which goes on running tasks while the pool's only
  // thread is still blocked (queued behind it, the core would wait for `release`).
  EXPECT_EQ(rt.block_on(rt.spawn(block_in_place_beside(&sibling_ran))), 0);
  EXPECT_TRUE(sibling_ran.load());
  release.open();
  rt.block_on(std::move(busy));
}

Task<int> block_here() {
  int v = spool::block_in_place([] { return 6; });
  co_return v;
}

TEST_F(ThreadStartFailure, BlockInPlaceKeepsTheCoreWhenNoThreadCanTakeIt) {
  auto rt = Builder::multi_thread().worker_threads(1).build();
  fail_thread_starts(0, 1);
  EXPECT_EQ(rt.block_on(rt.spawn(block_here())), 6);
  EXPECT_EQ(rt.block_on(rt.spawn(block_here())), 6);  // the worker still runs tasks
}

}  // namespace
