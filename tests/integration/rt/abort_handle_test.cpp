// AbortHandle: aborting a task through a copy while another party keeps the JoinHandle, or
// after the JoinHandle was dropped; is_finished and id; a no-op once the task finished; and
// handles that outlive their task's result or its runtime (the header they pin is freed with
// the last of them: ASan/LSan). On both runtime flavours.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <optional>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::AbortHandle;
using spool::Task;
using spool_rt_test::DropCounter;
using spool_rt_test::ManualLeaf;

using spool_rt_test::value;

// Holds a DropCounter local while it waits on a leaf that never fires in the test. `drops`:
// incremented (DropCounter's fetch_add) by the worker that destroys the local; the test
// reads it after the abort was seen to finish, which orders the increment before the read.
Task<int> pending_with_local(std::atomic<std::int64_t>* drops, ManualLeaf leaf) {
  DropCounter local(*drops);
  co_await leaf;
  co_return 1;
}

class AbortHandleAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(AbortHandleAnyFlavor);

TEST_P(AbortHandleAnyFlavor, ACopyAbortsTheTaskWhoseJoinHandleIsHeldElsewhere) {
  auto rt = build();
  std::atomic<std::int64_t> drops{0};
  ManualLeaf leaf;
  auto h = rt.spawn(pending_with_local(&drops, leaf));
  const AbortHandle original = h.abort_handle();
  const AbortHandle copy = original;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(copy.id(), h.id());
  until_pending(rt, leaf);
  EXPECT_FALSE(copy.is_finished());
  copy.abort();
  try {
    wait(rt, h);
    FAIL() << "expected a cancelled JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled());
  }
  EXPECT_EQ(drops.load(), 1) << "the aborted task's local must be destroyed";
  EXPECT_TRUE(original.is_finished());
  EXPECT_TRUE(copy.is_finished());
}

TEST_P(AbortHandleAnyFlavor, AbortsADetachedTask) {
  auto rt = build();
  std::atomic<std::int64_t> drops{0};
  ManualLeaf leaf;
  AbortHandle abort;
  {
    auto h = rt.spawn(pending_with_local(&drops, leaf));
    abort = h.abort_handle();
    until_pending(rt, leaf);
  }  // detached: only the AbortHandle reaches the task now
  abort.abort();
  // The local goes with the frame, an instant before the task is marked finished.
  EXPECT_TRUE(within_rounds(rt, [&] { return drops.load() == 1 && abort.is_finished(); }))
      << "the aborted task did not finish, or its local was not destroyed";
}

TEST_P(AbortHandleAnyFlavor, AbortAfterCompletionLeavesTheValue) {
  auto rt = build();
  auto h = rt.spawn(value(5));
  AbortHandle abort = h.abort_handle();
  EXPECT_TRUE(within_rounds(rt, [&abort] { return abort.is_finished(); }));
  abort.abort();
  EXPECT_EQ(wait(rt, h), 5);
  abort.abort();  // after the JoinHandle took the value: the header is still there
  EXPECT_TRUE(abort.is_finished());
}

TEST_P(AbortHandleAnyFlavor, OutlivesTheRuntimeOfAFinishedAndOfACancelledTask) {
  std::optional<AbortHandle> finished, cancelled;
  std::atomic<std::int64_t> drops{0};  // outlives the runtime, whose shutdown adds to it
  {
    auto rt = build();
    ManualLeaf leaf;
    auto done = rt.spawn(value(1));
    finished = done.abort_handle();
    EXPECT_EQ(wait(rt, done), 1);
    auto pending = rt.spawn(pending_with_local(&drops, leaf));
    cancelled = pending.abort_handle();
    pending.detach();
    until_pending(rt, leaf);  // its local exists now
  }  // the shutdown cancels `pending`'s task; both headers stay for the AbortHandles
  EXPECT_EQ(drops.load(), 1) << "the shutdown must destroy the cancelled task's local";
  EXPECT_TRUE(finished->is_finished());
  EXPECT_TRUE(cancelled->is_finished());
  finished->abort();  // no effect, and nothing touches the runtime that is gone
  cancelled->abort();
  finished.reset();  // frees the headers (ASan/LSan: no leak, no use after free)
  cancelled.reset();
}

TEST(AbortHandle, AnEmptyHandleDoesNothing) {
  const AbortHandle empty;
  EXPECT_TRUE(empty.is_finished());
  EXPECT_EQ(empty.id(), 0u);
  empty.abort();
  auto rt = spool::Builder::current_thread().build();
  auto h = rt.spawn(value(2));
  EXPECT_EQ(rt.block_on(h), 2);
  const AbortHandle after_join = h.abort_handle();  // the handle gave its result: empty
  EXPECT_TRUE(after_join.is_finished());
  EXPECT_EQ(after_join.id(), 0u);
}

TEST(AbortHandle, AssignmentAndMovesKeepOneReferenceEach) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf leaf_a, leaf_b;
  std::atomic<std::int64_t> drops{0};
  auto a = rt.spawn(pending_with_local(&drops, leaf_a));
  auto b = rt.spawn(pending_with_local(&drops, leaf_b));
  AbortHandle x = a.abort_handle();
  AbortHandle y = b.abort_handle();
  x = y;                         // x now refers to b's task, a's reference is dropped
  AbortHandle z = std::move(y);  // y becomes empty
  EXPECT_EQ(x.id(), b.id());
  EXPECT_EQ(z.id(), b.id());
  EXPECT_EQ(y.id(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  x.abort();
  EXPECT_THROW(rt.block_on(b), spool::JoinError);
  EXPECT_FALSE(a.is_finished());  // untouched
  a.abort();
  EXPECT_THROW(rt.block_on(a), spool::JoinError);
}

}  // namespace
