// this_thread_scheduler (src/task/scheduler_api.hpp): set on a multi-thread runtime's
// worker threads, to their runtime's scheduler, and nowhere else. Waker::wake hands its
// reference over to the queue entry only where it matches the task's scheduler
// (src/task/harness.cpp), so a worker left unmarked would silently lose that path.
#include <gtest/gtest.h>

#include "spool/spool.hpp"
#include "task/scheduler_api.hpp"

namespace {

using spool::detail::Scheduler;
using spool::detail::this_thread_scheduler;

spool::Task<const Scheduler*> scheduler_here() { co_return this_thread_scheduler; }

TEST(WorkerThread, IsMarkedWithItsRuntimesSchedulerAndNoOtherThreadIs) {
  spool::Runtime a = spool::Builder::multi_thread().worker_threads(2).build();
  spool::Runtime b = spool::Builder::multi_thread().worker_threads(1).build();
  const Scheduler* on_a = a.block_on(a.spawn(scheduler_here()));
  const Scheduler* on_b = b.block_on(b.spawn(scheduler_here()));
  EXPECT_NE(on_a, nullptr);
  EXPECT_NE(on_b, nullptr);
  EXPECT_NE(on_a, on_b);
  EXPECT_EQ(a.block_on(a.spawn(scheduler_here())), on_a);  // every worker: the same one
  EXPECT_EQ(this_thread_scheduler, nullptr);               // the block_on thread
  EXPECT_EQ(a.block_on(scheduler_here()), nullptr);        // its root, polled here
  spool::Runtime c = spool::Builder::current_thread().build();
  EXPECT_EQ(c.block_on(c.spawn(scheduler_here())), nullptr);  // not a worker thread
}

}  // namespace
