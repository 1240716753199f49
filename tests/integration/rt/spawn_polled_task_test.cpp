// spawn takes a Task in any unfinished state: one already polled by hand goes on where it
// stopped (a future half-polled under one executor, finished under another). An empty or
// finished Task is a clear error, and nothing leaks.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::Runtime;
using spool::Task;
using spool_rt_test::DropCounter;
using spool_rt_test::ManualLeaf;

Task<int> wait_then(ManualLeaf leaf, int v) {
  co_await leaf;
  co_return v;
}

Task<int> at_once(DropCounter, int v) { co_return v; }

class SpawnPolledTask : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(SpawnPolledTask);

TEST_P(SpawnPolledTask, ATaskPolledByHandFinishesOnTheRuntime) {
  ManualLeaf leaf;
  Task<int> task = wait_then(leaf, 7);
  spool::Waker noop = spool::Waker::noop();
  spool::Context cx(noop);
  ASSERT_TRUE(task.poll(cx).is_pending());  // the leaf holds the noop waker now
  Runtime rt = build();
  auto handle = rt.spawn(std::move(task));
  // The runtime's first poll hands the leaf the task's own waker; firing it wakes the task.
  std::thread firer([&] {
    leaf.wait_pending(2);
    leaf.fire();
  });
  int result = rt.block_on(std::move(handle));
  firer.join();
  EXPECT_EQ(result, 7);
}

TEST_P(SpawnPolledTask, AFinishedTaskIsRefusedAndItsFrameIsFreed) {
  // Counted by ~DropCounter (seq_cst, see rt_drop_counter.hpp); read after spawn returned.
  std::atomic<std::int64_t> drops{0};
  Task<int> task = at_once(DropCounter(drops), 3);
  spool::Waker noop = spool::Waker::noop();
  spool::Context cx(noop);
  ASSERT_EQ(task.poll(cx).value(), 3);
  Runtime rt = build();
  std::string what;
  try {
    (void)rt.spawn(std::move(task));
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("already finished"), std::string::npos) << what;
  EXPECT_EQ(drops.load(), 1);  // the frame went with the refused Task
}

TEST_P(SpawnPolledTask, AnEmptyTaskIsRefused) {
  Runtime rt = build();
  std::string what;
  try {
    (void)rt.spawn(Task<int>{});
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("empty"), std::string::npos) << what;
  std::atomic<std::int64_t> drops{0};  // DropCounter's target (seq_cst), not read here
  EXPECT_EQ(rt.block_on(rt.spawn(at_once(DropCounter(drops), 5))), 5);  // the runtime works on
}

}  // namespace
