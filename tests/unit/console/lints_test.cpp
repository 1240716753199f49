// The console's lints fire on what they describe and stay silent otherwise; the ones that need
// optional fields stay silent where those are absent.
#include <gtest/gtest.h>

#include "console/lints.hpp"
#include "console/sample.hpp"
#include "spool/spool.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::console::Lint;
using spool::console::Linter;
using spool::console::Snapshot;
using spool::console::TaskInfo;

TaskInfo task(std::uint64_t id, const char* channel, const char* state) {
  TaskInfo t;
  t.id = id;
  t.channel = channel;
  t.state = state;
  return t;
}

std::vector<std::string> kinds(const std::vector<Lint>& lints) {
  std::vector<std::string> out;
  for (const Lint& l : lints) out.push_back(l.kind);
  return out;
}

TEST(ConsoleLints, SelfWakeInMostPolls) {
  Snapshot s;
  TaskInfo spinner = task(1, "default", "scheduled");
  spinner.polls = 200;
  spinner.self_wakes = 150;
  TaskInfo worker = task(2, "default", "idle");
  worker.polls = 200;
  worker.self_wakes = 20;
  TaskInfo young = task(3, "default", "idle");
  young.polls = 10;
  young.self_wakes = 9;  // too few polls to judge
  s.tasks = {spinner, worker, young};
  const auto lints = Linter().check(s);
  ASSERT_EQ(lints.size(), 1u);
  EXPECT_EQ(lints[0].kind, "self_wake");
  EXPECT_EQ(lints[0].task, 1u);
}

TEST(ConsoleLints, LostWakerAndLongPollOnlyWhenMeasured) {
  Snapshot s;
  TaskInfo lost = task(1, "default", "idle");
  lost.wakers = 0;
  TaskInfo kept = task(2, "default", "idle");
  kept.wakers = 1;
  TaskInfo slow = task(3, "default", "idle");
  slow.longest_poll_ns = 11'000'000;
  TaskInfo quick = task(4, "default", "idle");
  quick.longest_poll_ns = 9'000'000;
  TaskInfo unmeasured = task(5, "default", "idle");
  s.tasks = {lost, kept, slow, quick, unmeasured};
  const auto lints = Linter().check(s);
  ASSERT_EQ(kinds(lints), (std::vector<std::string>{"lost_waker", "long_poll"}));
  EXPECT_EQ(lints[0].task, 1u);
  EXPECT_EQ(lints[1].task, 3u);
}

// Without longest_poll_ns: a task seen running in two snapshots with the same poll count has
// been in one poll since the first.
TEST(ConsoleLints, LongPollSeenInProgress) {
  Linter linter;
  Snapshot s;
  s.tasks = {task(1, "default", "running"), task(2, "default", "running")};
  s.tasks[0].polls = s.tasks[1].polls = 3;
  s.runtime.uptime_ms = 1000;
  EXPECT_TRUE(linter.check(s).empty()) << "one sighting says nothing";
  s.runtime.uptime_ms = 1020;
  s.tasks[1].polls = 4;  // task 2 finished that poll and is in another
  auto lints = linter.check(s);
  ASSERT_EQ(kinds(lints), std::vector<std::string>{"long_poll"});
  EXPECT_EQ(lints[0].task, 1u);
  s.runtime.uptime_ms = 1025;  // task 2's new poll: 5 ms so far
  lints = linter.check(s);
  ASSERT_EQ(lints.size(), 1u);
  EXPECT_EQ(lints[0].task, 1u);
  s.runtime.uptime_ms = 2000;
  s.tasks[0].polls = 4;  // task 1 is in a new poll: it starts again
  lints = linter.check(s);
  ASSERT_EQ(lints.size(), 1u);
  EXPECT_EQ(lints[0].task, 2u) << "task 2 stayed in its poll from 1020 to 2000";
}

TEST(ConsoleLints, CompleteOnCloseChannelThatNeverDrains) {
  spool::console::LintOptions options;
  options.stall = std::chrono::seconds(1);
  Linter linter(options);
  Snapshot s;
  s.channels.push_back({"batch", 1, "fifo", true, 0, 5, 0, 0, std::nullopt});
  s.channels.push_back({"other", 1, "fifo", false, 0, 5, 0, 0, std::nullopt});
  s.tasks = {task(1, "batch", "idle"), task(2, "other", "idle")};
  s.runtime.uptime_ms = 100;
  EXPECT_TRUE(linter.check(s).empty()) << "no history yet";
  s.runtime.uptime_ms = 1100;
  auto lints = linter.check(s);
  ASSERT_EQ(kinds(lints), std::vector<std::string>{"never_drains"});
  EXPECT_EQ(lints[0].channel, "batch");
  s.channels[0].polled = 6;  // it moved: the quiet time starts again
  s.runtime.uptime_ms = 1200;
  EXPECT_TRUE(linter.check(s).empty());
  s.runtime.uptime_ms = 3000;
  s.tasks[0].state = "scheduled";  // it has work to do: not stuck
  EXPECT_TRUE(linter.check(s).empty());
}

}  // namespace

namespace {

// Awaits `leaf` (the test keeps a copy, to fire it).
spool::Task<void> awaits(spool_rt_test::ManualLeaf leaf) { co_await leaf; }
// Awaits a future that returns pending and drops its waker: nothing can wake it.
spool::Task<void> awaits_forever() { co_await spool_rt_test::NeverReady{}; }

}  // namespace

// End to end, from a runtime's tasks: the lint fires for the task whose future dropped its
// waker, and not for the one whose future keeps it.
TEST(ConsoleLints, LostWakerFiresForAFutureThatDropsItsWakerOnly) {
  spool::Runtime rt = spool::Builder::current_thread().build();
  spool_rt_test::ManualLeaf leaf;
  auto keeps = rt.spawn(awaits(leaf));
  auto drops = rt.spawn(awaits_forever());
  // Both have run to their pending leaf once this yields twice (the current-thread runtime
  // polls its tasks in order before the root's next poll).
  rt.block_on([]() -> spool::Task<void> {
    co_await spool::yield_now();
    co_await spool::yield_now();
  }());
  ASSERT_EQ(leaf.pending_polls(), 1);
  spool::console::SnapshotMaker maker(spool::console::RuntimeFacts{"current_thread", {{}}});
  const Snapshot s = maker.make(rt.metrics(), rt.tasks(), std::chrono::nanoseconds(0));
  std::vector<std::uint64_t> lost;
  for (const Lint& l : s.lints) {
    if (l.kind == "lost_waker") lost.push_back(l.task.value_or(0));
  }
  EXPECT_EQ(lost, std::vector<std::uint64_t>{drops.id()});
  drops.abort();
  leaf.fire();
  rt.block_on(std::move(keeps));
}
