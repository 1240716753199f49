// TaskTracker: wait() completes only once the tracker is closed and empty; tasks tracked
// while it waits are waited for too; a tracked future releases its count when it completes,
// throws or is destroyed, after its own destruction; reopen(); stepped by hand with counting
// wakers. Then the graceful-shutdown recipe with a CancellationToken on both runtime flavours.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "spool/task_tracker.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::Task;
using spool::TaskTracker;
using spool_rt_test::ManualLeaf;
using spool_test::HandPoller;

TEST(TaskTracker, CountsTokensAndReportsClosing) {
  TaskTracker tracker;
  EXPECT_TRUE(tracker.is_empty());
  EXPECT_FALSE(tracker.is_closed());
  std::optional<spool::TaskTrackerToken> a(tracker.token());
  spool::TaskTrackerToken b = tracker.token();
  EXPECT_EQ(tracker.len(), 2u);
  const TaskTracker copy = tracker;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_TRUE(copy.close());
  EXPECT_FALSE(tracker.close()) << "the second close() must say it was closed already";
  EXPECT_TRUE(tracker.is_closed());
  a.reset();
  b.release();
  b.release();  // released already: no-op
  EXPECT_EQ(copy.len(), 0u);
  EXPECT_TRUE(tracker.reopen());
  EXPECT_FALSE(tracker.reopen());
  EXPECT_FALSE(copy.is_closed());
}

// A TaskTracker has no move: a moved-from one is a working copy of the same tracker.
TEST(TaskTracker, AMovedFromTrackerStillWorksOnTheSameTracker) {
  TaskTracker tracker;
  TaskTracker moved_to = std::move(tracker);
  TaskTracker assigned;
  assigned = std::move(moved_to);
  // NOLINTNEXTLINE(bugprone-use-after-move): moves copy
  spool::TaskTrackerToken a = tracker.token();
  spool::TaskTrackerToken b = moved_to.token();  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(assigned.len(), 2u);
  EXPECT_TRUE(moved_to.close());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(assigned.is_closed());
}

TEST(TaskTracker, PollingAMovedFromWaitThrows) {
  TaskTracker tracker;
  HandPoller party;
  auto w = tracker.wait();
  auto moved_to = std::move(w);
  try {
    (void)party.poll(w);  // NOLINT(bugprone-use-after-move)
    FAIL() << "a moved-from wait() future was polled without an error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("moved from"), std::string::npos) << e.what();
  }
  tracker.close();
  EXPECT_TRUE(party.poll(moved_to).is_ready());
}

TEST(TaskTracker, WaitCompletesOnlyWhenClosedAndEmpty) {
  TaskTracker tracker;
  HandPoller party;
  auto w = tracker.wait();
  EXPECT_TRUE(party.poll(w).is_pending()) << "open and empty: not done";
  std::optional<spool::TaskTrackerToken> task(tracker.token());
  tracker.close();
  EXPECT_EQ(party.wakes(), 0) << "closed with a task left: not done";
  EXPECT_TRUE(party.poll(w).is_pending());
  task.reset();
  EXPECT_EQ(party.wakes(), 1) << "the last task's end must wake the waiter";
  EXPECT_TRUE(party.poll(w).is_ready());
  auto later = tracker.wait();
  EXPECT_TRUE(party.poll(later).is_ready());  // closed and empty already
}

TEST(TaskTracker, CloseOfAnEmptyTrackerWakesTheWaiter) {
  TaskTracker tracker;
  HandPoller party;
  auto w = tracker.wait();
  EXPECT_TRUE(party.poll(w).is_pending());
  tracker.close();
  EXPECT_EQ(party.wakes(), 1);
  EXPECT_TRUE(party.poll(w).is_ready());
}

TEST(TaskTracker, TasksTrackedWhileWaitingAreWaitedFor) {
  TaskTracker tracker;
  HandPoller party;
  std::optional<spool::TaskTrackerToken> first(tracker.token());
  tracker.close();
  auto w = tracker.wait();
  EXPECT_TRUE(party.poll(w).is_pending());
  std::optional<spool::TaskTrackerToken> second(tracker.token());  // tracked while waiting
  first.reset();
  EXPECT_EQ(party.wakes(), 0);
  EXPECT_TRUE(party.poll(w).is_pending()) << "the task tracked while waiting still runs";
  second.reset();
  EXPECT_TRUE(party.poll(w).is_ready());
}

TEST(TaskTracker, AReopenedTrackerWaitsForTheNextClose) {
  TaskTracker tracker;
  HandPoller party;
  std::optional<spool::TaskTrackerToken> task(tracker.token());
  tracker.close();
  tracker.reopen();
  auto w = tracker.wait();
  EXPECT_TRUE(party.poll(w).is_pending());
  task.reset();  // empty, but open: not done
  EXPECT_EQ(party.wakes(), 0);
  EXPECT_TRUE(party.poll(w).is_pending());
  tracker.close();
  EXPECT_TRUE(party.poll(w).is_ready());
}

// tokio's semantics: once closed and empty after wait() was made, the wait is done, even if
// the tracker was reopened before the wait was polled again.
TEST(TaskTracker, AWaitSeesAnIdleMomentThatAReopenEnded) {
  TaskTracker tracker;
  HandPoller party;
  auto w = tracker.wait();
  auto never_polled = tracker.wait();
  EXPECT_TRUE(party.poll(w).is_pending());
  tracker.close();
  tracker.reopen();
  EXPECT_TRUE(party.poll(w).is_ready());
  EXPECT_TRUE(party.poll(never_polled).is_ready());
}

// tokio's semantics at creation too: a wait() made while the tracker is closed and empty is
// done, even if the tracker is reopened, or tracks a task, before its first poll.
TEST(TaskTracker, AWaitMadeWhileClosedAndEmptyIsReadyAfterAReopenOrANewTask) {
  HandPoller party;
  TaskTracker reopened, busy;
  reopened.close();
  busy.close();
  auto after_reopen = reopened.wait();
  auto after_task = busy.wait();
  reopened.reopen();
  spool::TaskTrackerToken task = busy.token();
  EXPECT_TRUE(party.poll(after_reopen).is_ready()) << "reopened before the first poll";
  EXPECT_TRUE(party.poll(after_task).is_ready()) << "a task tracked before the first poll";
  EXPECT_EQ(busy.len(), 1u);
}

// A future that records how many tasks its tracker counted when it was destroyed.
struct RecordsLenAtDestruction {
  ManualLeaf leaf;
  const TaskTracker* tracker;
  std::size_t* len_seen;
  bool fail = false;
  spool::Poll<int> poll(spool::Context& cx) {
    if (leaf.poll(cx).is_pending()) return spool::pending;
    if (fail) throw std::runtime_error("tracked future failed");
    return 4;
  }
  RecordsLenAtDestruction(ManualLeaf l, const TaskTracker* t, std::size_t* seen, bool f)
      : leaf(std::move(l)), tracker(t), len_seen(seen), fail(f) {}
  RecordsLenAtDestruction(RecordsLenAtDestruction&& o) noexcept
      : leaf(o.leaf),
        tracker(std::exchange(o.tracker, nullptr)),
        len_seen(o.len_seen),
        fail(o.fail) {}
  ~RecordsLenAtDestruction() {
    if (tracker != nullptr) *len_seen = tracker->len();
  }
};

TEST(TaskTracker, ATrackedFutureIsDestroyedThenUncountedWhenItCompletes) {
  TaskTracker tracker;
  HandPoller party;
  ManualLeaf leaf;
  std::size_t len_seen = 99;
  auto tracked = tracker.track(RecordsLenAtDestruction(leaf, &tracker, &len_seen, false));
  EXPECT_EQ(tracker.len(), 1u);
  EXPECT_TRUE(party.poll(tracked).is_pending());
  leaf.fire();
  auto p = party.poll(tracked);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 4);
  EXPECT_EQ(len_seen, 1u) << "the future must be destroyed before its count is released";
  EXPECT_EQ(tracker.len(), 0u) << "completion must release the count, not the wrapper's end";
  EXPECT_THROW((void)party.poll(tracked), std::logic_error);
}

TEST(TaskTracker, ATrackedFutureThatThrowsOrIsDroppedIsUncounted) {
  TaskTracker tracker;
  HandPoller party;
  ManualLeaf leaf;
  std::size_t len_seen = 99;
  auto throwing = tracker.track(RecordsLenAtDestruction(leaf, &tracker, &len_seen, true));
  leaf.fire();
  EXPECT_THROW((void)party.poll(throwing), std::runtime_error);
  EXPECT_EQ(len_seen, 1u);
  EXPECT_EQ(tracker.len(), 0u);
  std::size_t dropped_len_seen = 99;
  std::optional dropped(
      tracker.track(RecordsLenAtDestruction(ManualLeaf(), &tracker, &dropped_len_seen, false)));
  EXPECT_TRUE(party.poll(*dropped).is_pending());
  dropped.reset();
  EXPECT_EQ(dropped_len_seen, 1u);
  EXPECT_EQ(tracker.len(), 0u);
}

Task<int> three() { co_return 3; }

// Spawns three() onto `channel` through the tracker; gives the tracker's count just after the
// spawn, once the task's output was taken.
Task<std::size_t> spawn_tracked_on(TaskTracker tracker, spool::ChannelId channel) {
  auto h = tracker.spawn_on(channel, three());
  const std::size_t counted = tracker.len();
  EXPECT_EQ(co_await std::move(h), 3);
  co_return counted;
}

TEST(TaskTracker, SpawnOnPutsTheTrackedTaskOnThatChannel) {
  auto rt = spool::Builder::current_thread().levels({spool::Level{"main", "tracked"}}).build();
  TaskTracker tracker;
  EXPECT_EQ(rt.block_on(spawn_tracked_on(tracker, rt.channel("tracked"))), 1u);
  EXPECT_TRUE(tracker.is_empty());
  for (const spool::ChannelMetrics& c : rt.metrics().channels) {
    EXPECT_EQ(c.polled, c.name == "tracked" ? 1u : 0u) << c.name;
  }
}

class TaskTrackerAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(TaskTrackerAnyFlavor);

constexpr int kWorkers = 8;

// A worker of the graceful-shutdown recipe: it serves until cancelled, then spawns (tracked)
// one last piece of clean-up work, which the shutdown must wait for too.
Task<void> cleanup(std::atomic<int>* cleaned) {
  co_await spool::yield_now();
  cleaned->fetch_add(1);
}

Task<void> serve(spool::CancellationToken token, TaskTracker tracker, std::atomic<int>* started,
                 std::atomic<int>* cleaned) {
  started->fetch_add(1);
  spool::WaitForCancellation cancelled = token.cancelled();
  co_await std::move(cancelled);
  tracker.spawn(cleanup(cleaned)).detach();
}

Task<void> shut_down(spool::CancellationToken token, TaskTracker tracker) {
  token.cancel();
  tracker.close();
  spool::TaskTrackerWait all_done = tracker.wait();
  co_await std::move(all_done);
}

TEST_P(TaskTrackerAnyFlavor, GracefulShutdownWaitsForEveryTaskAndTheirLateChildren) {
  auto rt = build();
  TaskTracker tracker;
  spool::CancellationToken token;
  std::atomic<int> started{0}, cleaned{0};
  for (int i = 0; i < kWorkers; ++i) {
    tracker.spawn_with(rt.handle(), serve(token, tracker, &started, &cleaned)).detach();
  }
  EXPECT_EQ(tracker.len(), static_cast<std::size_t>(kWorkers));
  wait(rt, shut_down(token, tracker));
  EXPECT_EQ(started.load(), kWorkers);
  EXPECT_EQ(cleaned.load(), kWorkers) << "wait() returned before every clean-up task ended";
  EXPECT_TRUE(tracker.is_empty());
}

TEST_P(TaskTrackerAnyFlavor, TheJoinHandleKeepsTheOutputButNotTheCount) {
  auto rt = build();
  TaskTracker tracker;
  ManualLeaf leaf;
  auto h = tracker.spawn_with(rt.handle(), leaf);
  tracker.close();
  leaf.fire();
  // Empties although the JoinHandle has not been polled. (The count is released inside the
  // task's last poll, so is_finished() may turn true an instant after this.)
  ASSERT_TRUE(within_rounds(rt, [&tracker] { return tracker.is_empty(); }))
      << "the finished task is still counted";
  wait(rt, tracker.wait());  // closed and empty: ready at once
  EXPECT_NO_THROW(wait(rt, std::move(h)));
}

}  // namespace
