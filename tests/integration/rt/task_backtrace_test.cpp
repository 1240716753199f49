// Another task's backtrace: JoinHandle::backtrace, AbortHandle::backtrace, the backtraces of
// Runtime::tasks() and the lines Runtime::dump() prints, read while the task is held idle.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/await_site.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Backtrace;
using spool::Task;
using spool::TaskSnapshot;
using spool_rt_test::ManualLeaf;

// Where the coroutines below await: set by them, read by the tests.
struct Lines {
  std::uint32_t leaf = 0, nest = 0, fan = 0;
};

// Awaits `leaf` at the bottom of a chain of `depth` coroutines.
Task<int> nest(int depth, ManualLeaf leaf, Lines& at) {
  if (depth == 1) {
    at.leaf = __LINE__ + 1;
    co_await leaf;
    co_return 1;
  }
  at.nest = __LINE__ + 1;
  co_return 1 + co_await nest(depth - 1, leaf, at);
}

// The frame `s` is the co_await at `line` of this file, in `function`.
void expect_site(const spool::AwaitSite& s, std::uint32_t line, const char* function = "nest") {
  spool_backtrace_test::expect_site(s, __FILE__, line, function);
}

class TaskBacktraceAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  // The backtrace of `h`'s task once it is idle (it may still be finishing its poll when
  // its leaf reports pending): asked until it is given, within a bound.
  template <class Handle>
  std::optional<Backtrace> idle_backtrace(spool::Runtime& rt, const Handle& h) const {
    std::optional<Backtrace> bt;
    EXPECT_TRUE(within_rounds(rt, [&] { return (bt = h.backtrace()).has_value(); }));
    return bt;
  }
};
SPOOL_RT_INSTANTIATE_FLAVORS(TaskBacktraceAnyFlavor);

// Depth 1, 2 and 10: innermost first, each frame at its co_await; the task goes on as before.
TEST_P(TaskBacktraceAnyFlavor, AJoinHandleReadsItsIdleTasksChain) {
  auto rt = build();
  for (int depth : {1, 2, 10}) {
    ManualLeaf leaf;
    Lines at;
    auto h = rt.spawn(nest(depth, leaf, at));
    until_pending(rt, leaf);
    const std::optional<Backtrace> bt = idle_backtrace(rt, h);
    ASSERT_TRUE(bt.has_value());
    ASSERT_EQ(bt->frames.size(), static_cast<std::size_t>(depth));
    expect_site(bt->frames[0], at.leaf);
    for (int i = 1; i < depth; ++i) expect_site(bt->frames[static_cast<std::size_t>(i)], at.nest);
    leaf.fire();
    EXPECT_EQ(wait(rt, std::move(h)), depth);
  }
}

TEST_P(TaskBacktraceAnyFlavor, AnAbortHandleReadsItToo) {
  auto rt = build();
  ManualLeaf leaf;
  Lines at;
  auto h = rt.spawn(nest(2, leaf, at));
  const spool::AbortHandle a = h.abort_handle();
  until_pending(rt, leaf);
  const std::optional<Backtrace> bt = idle_backtrace(rt, a);
  ASSERT_TRUE(bt.has_value());
  EXPECT_EQ(bt->frames.size(), 2u);
  leaf.fire();
  EXPECT_EQ(wait(rt, std::move(h)), 2);
  EXPECT_FALSE(a.backtrace().has_value());  // finished
}

TEST_P(TaskBacktraceAnyFlavor, AFinishedOrEmptyHandleHasNone) {
  auto rt = build();
  auto h = rt.spawn([]() -> Task<int> { co_return 7; }());
  EXPECT_TRUE(within_rounds(rt, [&] { return h.is_finished(); }));
  EXPECT_FALSE(h.backtrace().has_value());
  EXPECT_EQ(wait(rt, std::move(h)), 7);
  EXPECT_FALSE(h.backtrace().has_value());  // NOLINT(bugprone-use-after-move): empty now
  EXPECT_FALSE(spool::AbortHandle().backtrace().has_value());
}

// A task asking for its own backtrace through its handle is running: none (it has
// co_await spool::backtrace() for that).
TEST_P(TaskBacktraceAnyFlavor, ARunningTaskHasNone) {
  auto rt = build();
  auto handle = std::make_shared<std::optional<spool::AbortHandle>>();
  ManualLeaf go;
  auto h = rt.spawn(
      [](std::shared_ptr<std::optional<spool::AbortHandle>> self, ManualLeaf go) -> Task<bool> {
        co_await go;
        co_return !(*self)->backtrace().has_value();
      }(handle, go));
  *handle = h.abort_handle();
  go.fire();
  EXPECT_TRUE(wait(rt, std::move(h)));
}

// The read gives the task back as it found it: an abort after it cancels the task. (Wakes and
// aborts that land during the read: the stress test races them, the model explores them.)
TEST_P(TaskBacktraceAnyFlavor, AnAbortedTaskIsCancelledAfterTheRead) {
  auto rt = build();
  ManualLeaf leaf;
  Lines at;
  auto h = rt.spawn(nest(3, leaf, at));
  until_pending(rt, leaf);
  ASSERT_TRUE(idle_backtrace(rt, h).has_value());
  h.abort();
  EXPECT_TRUE(within_rounds(rt, [&] { return h.is_finished(); }));
  EXPECT_THROW(wait(rt, std::move(h)), spool::JoinError);
}

using spool_rt_test::find;

TEST_P(TaskBacktraceAnyFlavor, TasksGivesIdleTasksTheirBacktraceAndLeaf) {
  auto rt = build();
  ManualLeaf leaf;
  Lines at;
  auto h = rt.spawn(nest(2, leaf, at));
  until_pending(rt, leaf);
  std::vector<TaskSnapshot> all;
  EXPECT_TRUE(within_rounds(rt, [&] {
    all = rt.tasks();
    const TaskSnapshot* s = find(all, h.id());
    return s != nullptr && s->backtrace.has_value();
  }));
  const TaskSnapshot* s = find(all, h.id());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->state, TaskSnapshot::State::kIdle);
  ASSERT_TRUE(s->backtrace.has_value());
  ASSERT_EQ(s->backtrace->frames.size(), 2u);
  expect_site(s->backtrace->frames[0], at.leaf);
  expect_site(s->backtrace->frames[1], at.nest);
  EXPECT_EQ(s->waiting_on, "spool_rt_test::ManualLeaf");
  leaf.fire();
  EXPECT_EQ(wait(rt, std::move(h)), 2);
}

// The task that asks, running, is listed without one (it is named to be found).
TEST_P(TaskBacktraceAnyFlavor, TheAskingTaskIsListedRunningWithout) {
  auto rt = build();
  auto h = rt.spawn(spool::named("asking", [](spool::Runtime* rt) -> Task<bool> {
    for (const TaskSnapshot& s : rt->tasks()) {
      if (s.name == "asking") co_return s.state == TaskSnapshot::State::kRunning && !s.backtrace;
    }
    co_return false;
  }(&rt)));
  EXPECT_TRUE(wait(rt, std::move(h)));
}

// A task that yielded is listed waiting on spool::YieldNow (a Task's co_await of it has an
// awaiter of its own, which keeps the leaf's type). On a current-thread runtime the asking
// task runs while the yielder waits in the thread's deferred list.
TEST(TaskBacktrace, ATaskThatYieldedWaitsOnYieldNow) {
  auto rt = spool::Builder::current_thread().build();
  auto yielder = rt.spawn([]() -> Task<void> { co_await spool::yield_now(); }());
  auto asking = rt.spawn([](spool::Runtime* rt, std::uint64_t id) -> Task<std::string> {
    for (const TaskSnapshot& s : rt->tasks()) {
      if (s.id == id) co_return s.waiting_on;
    }
    co_return "not listed";
  }(&rt, yielder.id()));
  EXPECT_EQ(rt.block_on(std::move(asking)), "spool::YieldNow");
  rt.block_on(std::move(yielder));
}

// The lost-waker count: a leaf that keeps its waker leaves one, a leaf that drops it (returns
// pending without storing it) none: nothing can wake that task. An AbortHandle counts too.
TEST_P(TaskBacktraceAnyFlavor, AnIdleTaskCountsTheWakersThatCouldWakeIt) {
  auto rt = build();
  ManualLeaf leaf;  // keeps the latest waker
  auto kept = rt.spawn([](ManualLeaf leaf) -> Task<void> { co_await leaf; }(leaf));
  auto lost = rt.spawn([]() -> Task<void> { co_await spool_rt_test::NeverReady{}; }());
  auto lost_abortable = rt.spawn([]() -> Task<void> { co_await spool_rt_test::NeverReady{}; }());
  const spool::AbortHandle abort = lost_abortable.abort_handle();
  // Detached (no JoinHandle): the same counts without it.
  ManualLeaf detached_leaf;
  auto detached_kept =
      rt.spawn([](ManualLeaf leaf) -> Task<void> { co_await leaf; }(detached_leaf));
  auto detached_lost = rt.spawn([]() -> Task<void> { co_await spool_rt_test::NeverReady{}; }());
  const std::uint64_t kept_id = detached_kept.id(), lost_id = detached_lost.id();
  detached_kept.detach();
  detached_lost.detach();
  std::vector<TaskSnapshot> all;
  EXPECT_TRUE(within_rounds(rt, [&] {
    all = rt.tasks();
    return std::all_of(all.begin(), all.end(), [](const TaskSnapshot& s) { return s.wakers; });
  }));
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(find(all, kept.id())->wakers, 1u);
  EXPECT_EQ(find(all, lost.id())->wakers, 0u);
  EXPECT_EQ(find(all, lost_abortable.id())->wakers, 1u);
  EXPECT_EQ(find(all, kept_id)->wakers, 1u);
  EXPECT_EQ(find(all, lost_id)->wakers, 0u);  // (cancelled by the runtime's drop)
  // Each live one was made (a clone or the AbortHandle) and none dropped.
  for (const TaskSnapshot& t : all) {
    EXPECT_EQ(t.waker_clones, *t.wakers) << t.id;
    EXPECT_EQ(t.waker_drops, 0u) << t.id;
  }
  lost.abort();
  lost_abortable.abort();
  detached_leaf.fire();
  leaf.fire();
  wait(rt, std::move(kept));
}

// A leaf that clones its Context's Waker three times in each pending poll and keeps the last.
struct CloningLeaf {
  std::shared_ptr<std::optional<spool::Waker>> kept =
      std::make_shared<std::optional<spool::Waker>>();
  std::shared_ptr<std::atomic<int>> polls = std::make_shared<std::atomic<int>>(0);
  spool::Poll<void> poll(spool::Context& cx) {
    for (int i = 0; i < 3; ++i) kept->emplace(cx.waker());  // each copy a clone
    polls->fetch_add(1, std::memory_order_release);         // after the waker is stored
    return spool::pending;
  }
};

// Every Waker made counts as a clone, and every one gone (dropped, or consumed by a wake by
// value) as a drop: two polls of three clones, two dropped by each poll and one by its wake.
TEST_P(TaskBacktraceAnyFlavor, AnIdleTaskCountsItsWakerClonesAndDrops) {
  auto rt = build();
  CloningLeaf leaf;
  auto h = rt.spawn([](CloningLeaf leaf) -> Task<void> { co_await leaf; }(leaf));
  // The task's snapshot once it has been polled `n` times and is idle again.
  const auto idle_after = [&](int n) {
    std::optional<TaskSnapshot> seen;
    EXPECT_TRUE(within_rounds(rt, [&] {
      if (leaf.polls->load(std::memory_order_acquire) < n) return false;
      std::vector<TaskSnapshot> all = rt.tasks();
      if (all.size() != 1 || !all[0].wakers) return false;
      seen = all[0];
      return true;
    }));
    return seen;
  };
  std::optional<TaskSnapshot> first = idle_after(1);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->wakers, 1u);
  EXPECT_EQ(first->waker_clones, 3u);
  EXPECT_EQ(first->waker_drops, 2u);
  ASSERT_TRUE(leaf.kept->has_value());
  spool::Waker w = std::move(**leaf.kept);
  leaf.kept->reset();
  std::move(w).wake();  // by value: its reference goes with the wake
  std::optional<TaskSnapshot> second = idle_after(2);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->wakers, 1u);
  EXPECT_EQ(second->waker_clones, 6u);
  EXPECT_EQ(second->waker_drops, 5u);
  h.abort();
}

// Where a task that moves between workers runs and awaits: set by it, read by the test after
// the leaf it then waits on reports pending (which orders them: ManualLeaf's counter).
struct Moves {
  long before = 0, after = 0;  // the thread's id (gettid)
  std::uint32_t first = 0, nest = 0, second = 0;
};

// The calling thread's id. Not std::this_thread::get_id(): pthread_self is declared const, so
// clang keeps its value across a co_await, where the coroutine may resume on another thread.
long this_thread_id() { return ::syscall(SYS_gettid); }

// Holds its worker until `release` (it blocks in its one poll).
Task<void> hold_worker(std::atomic<bool>& held, std::atomic<bool>& release) {
  held.store(true);
  held.notify_all();
  release.wait(false);
  co_return;
}

Task<int> await_second(ManualLeaf second, Moves& m) {
  m.second = __LINE__ + 1;
  co_await second;
  co_return 2;
}

// Spawns hold_worker, which takes this worker's LIFO slot (no other worker steals from it) and
// runs as soon as this poll ends; so the wake of `first`, from outside, resumes this task on
// the other worker.
Task<int> move_between_workers(ManualLeaf first, ManualLeaf second, std::atomic<bool>& held,
                               std::atomic<bool>& release, Moves& m) {
  m.before = this_thread_id();
  spool::spawn(hold_worker(held, release)).detach();
  m.first = __LINE__ + 1;
  co_await first;
  m.after = this_thread_id();
  m.nest = __LINE__ + 1;
  co_return co_await await_second(second, m);
}

// The backtrace of `h`'s task once it is idle, asked a bounded number of times (it may still
// be finishing the poll in which its leaf reported pending).
std::optional<Backtrace> backtrace_when_idle(const spool::JoinHandle<int>& h) {
  std::optional<Backtrace> bt;
  for (int i = 0; i < 1'000'000 && !(bt = h.backtrace()); ++i) std::this_thread::yield();
  return bt;
}

// A task read before and after it moved to another worker: each chain is where it waits then.
TEST(TaskBacktrace, ATaskThatMovedBetweenWorkersIsReadWhereItWaitsNow) {
  // Before the runtime, which its destructor joins: they outlive every task.
  // held: stored (seq_cst) and notified by hold_worker once its poll runs, waited on here;
  // release: stored (seq_cst) and notified here, waited on by hold_worker. Flags only.
  std::atomic<bool> held{false}, release{false};
  ManualLeaf first, second;
  Moves m;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  // However the test ends (a failed ASSERT returns early), the held worker is let go.
  struct LetGo {
    std::atomic<bool>& release;
    ~LetGo() {
      release.store(true);
      release.notify_all();
    }
  } let_go{release};
  auto h = rt.spawn(move_between_workers(first, second, held, release, m));
  first.wait_pending();
  std::optional<Backtrace> bt = backtrace_when_idle(h);
  ASSERT_TRUE(bt.has_value());
  ASSERT_EQ(bt->frames.size(), 1u);
  expect_site(bt->frames[0], m.first, "move_between_workers");
  held.wait(false);  // its worker is held: the wake below resumes it on the other
  first.fire();
  second.wait_pending();
  EXPECT_NE(m.after, m.before) << "the task did not move: the test checked nothing";
  bt = backtrace_when_idle(h);
  ASSERT_TRUE(bt.has_value());
  ASSERT_EQ(bt->frames.size(), 2u);
  expect_site(bt->frames[0], m.second, "await_second");
  expect_site(bt->frames[1], m.nest, "move_between_workers");
  release.store(true);
  release.notify_all();
  second.fire();
  EXPECT_EQ(rt.block_on(std::move(h)), 2);
}

// Waits on when_all of two chains and a bare leaf.
Task<void> fan(ManualLeaf first, ManualLeaf second, ManualLeaf third, Lines& at) {
  at.fan = __LINE__ + 1;
  co_await spool::when_all(nest(1, first, at), nest(2, second, at), std::move(third));
}

// A chain that waits on a combinator: its frames end at the combinator's co_await, and each
// unfinished branch is listed with its own chain (a bare leaf with its type); a branch that
// finished is not.
TEST_P(TaskBacktraceAnyFlavor, AChainWaitingOnWhenAllListsItsUnfinishedBranches) {
  auto rt = build();
  ManualLeaf first, second, third;
  Lines at;
  auto h = rt.spawn(fan(first, second, third, at));
  until_pending(rt, third);  // polled after the others
  std::optional<Backtrace> bt = idle_backtrace(rt, h);
  ASSERT_TRUE(bt.has_value());
  ASSERT_EQ(bt->frames.size(), 1u);
  expect_site(bt->frames[0], at.fan, "fan");
  ASSERT_EQ(bt->branches.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(bt->branches[i].index, i);
    EXPECT_EQ(bt->branches[i].waiting_on, "spool_rt_test::ManualLeaf");
    EXPECT_TRUE(bt->branches[i].backtrace.branches.empty());
  }
  ASSERT_EQ(bt->branches[0].backtrace.frames.size(), 1u);
  expect_site(bt->branches[0].backtrace.frames[0], at.leaf);
  ASSERT_EQ(bt->branches[1].backtrace.frames.size(), 2u);
  expect_site(bt->branches[1].backtrace.frames[0], at.leaf);
  expect_site(bt->branches[1].backtrace.frames[1], at.nest);
  EXPECT_TRUE(bt->branches[2].backtrace.frames.empty());

  first.fire();
  EXPECT_TRUE(within_rounds(rt, [&] {
    bt = h.backtrace();
    return bt && bt->branches.size() == 2;
  }));
  ASSERT_TRUE(bt.has_value());
  ASSERT_EQ(bt->branches.size(), 2u);
  EXPECT_EQ(bt->branches[0].index, 1u);
  EXPECT_EQ(bt->branches[1].index, 2u);
  const std::string text = bt->to_string();
  EXPECT_NE(text.find("\n  branch 1, waiting on spool_rt_test::ManualLeaf:\n    at "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  branch 2, waiting on spool_rt_test::ManualLeaf:\n"), std::string::npos)
      << text;
  second.fire();
  third.fire();
  wait(rt, std::move(h));
}

// A when_all of 70 Tasks: the reader lists 64 of them and counts the rest, so that the time
// it holds the task (and a snapshot's size) stays bounded.
TEST_P(TaskBacktraceAnyFlavor, AWideCombinatorListsSixtyFourBranchesAndCountsTheRest) {
  auto rt = build();
  ManualLeaf leaf;
  Lines at;
  std::vector<Task<int>> branches;
  for (int i = 0; i < 70; ++i) branches.push_back(nest(1, leaf, at));
  auto h = rt.spawn([](std::vector<Task<int>> all) -> Task<std::size_t> {
    co_return (co_await spool::when_all(std::move(all))).size();
  }(std::move(branches)));
  until_pending(rt, leaf);
  const std::optional<Backtrace> bt = idle_backtrace(rt, h);
  ASSERT_TRUE(bt.has_value());
  EXPECT_EQ(bt->branches.size(), 64u);
  EXPECT_EQ(bt->branches.back().index, 63u);
  EXPECT_EQ(bt->omitted_branches, 6u);
  EXPECT_NE(bt->to_string().find("\n  (6 more branches not listed)\n"), std::string::npos);
  h.abort();  // (the branches share one leaf, which keeps one waker: a fire wakes one)
  EXPECT_TRUE(within_rounds(rt, [&] { return h.is_finished(); }));
}

// Waits in a scope's body.
Task<void> in_scope(ManualLeaf leaf, Lines& at) {
  at.fan = __LINE__ + 1;
  co_await spool::scope([&](spool::Scope&) -> Task<void> { (void)co_await nest(1, leaf, at); });
}

// A chain waiting on a scope lists its body as branch 0, with the body's own chain.
TEST_P(TaskBacktraceAnyFlavor, AChainWaitingOnAScopeListsItsBody) {
  auto rt = build();
  ManualLeaf leaf;
  Lines at;
  auto h = rt.spawn(in_scope(leaf, at));
  until_pending(rt, leaf);
  const std::optional<Backtrace> bt = idle_backtrace(rt, h);
  ASSERT_TRUE(bt.has_value());
  ASSERT_EQ(bt->frames.size(), 1u);
  expect_site(bt->frames[0], at.fan, "in_scope");
  ASSERT_EQ(bt->branches.size(), 1u);
  EXPECT_EQ(bt->branches[0].index, 0u);
  EXPECT_EQ(bt->branches[0].waiting_on, "spool_rt_test::ManualLeaf");
  ASSERT_EQ(bt->branches[0].backtrace.frames.size(), 2u);  // nest, then the body
  expect_site(bt->branches[0].backtrace.frames[0], at.leaf);
  leaf.fire();
  wait(rt, std::move(h));
}

TEST_P(TaskBacktraceAnyFlavor, DumpPrintsEachIdleTasksBacktrace) {
  auto rt = build();
  ManualLeaf leaf;
  Lines at;
  auto h = rt.spawn(spool::named("nested", nest(2, leaf, at)));
  until_pending(rt, leaf);
  std::string dump;
  EXPECT_TRUE(within_rounds(rt, [&] {
    dump = rt.dump();
    return dump.find(" in ") != std::string::npos;  // a backtrace line
  }));
  const std::string head =
      "task " + std::to_string(h.id()) + " \"nested\" [default]: idle, " +
      "waiting on spool_rt_test::ManualLeaf, 1 waker(s), 1 poll(s), spawned at ";
  EXPECT_NE(dump.find(head), std::string::npos) << dump;
  const std::string first = "  at " + std::string(__FILE__) + ":" + std::to_string(at.leaf);
#if defined(__cpp_lib_source_location)
  EXPECT_NE(dump.find(first), std::string::npos) << dump;
#endif
  leaf.fire();
  EXPECT_EQ(wait(rt, std::move(h)), 2);
}

}  // namespace
