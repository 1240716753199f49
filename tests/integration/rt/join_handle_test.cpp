// JoinHandle: the value, the task's exception (nested in JoinError), abort before the first
// poll, while pending and after completion, detaching, and awaiting from a plain thread.
// All but the frame-lifetime tests (which rely on a current-thread runtime's order) run on
// both runtime flavours: JoinHandleAnyFlavor.<test>/MultiThread and .../CurrentThread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <latch>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_gate.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Task;
using spool_rt_test::DropCounter;
using spool_rt_test::Gate;
using spool_rt_test::ManualLeaf;

using spool_rt_test::value;

Task<std::unique_ptr<std::string>> move_only(std::string s) {
  co_return std::make_unique<std::string>(std::move(s));
}

using spool_rt_test::set_flag;

Task<int> throws_runtime_error(std::string what) {
  throw std::runtime_error(what);
  co_return 0;
}

// Throws after a suspension, so the exception leaves a later poll, not the first.
Task<int> throws_after_wait(ManualLeaf leaf) {
  co_await leaf;
  throw std::out_of_range("late failure");
  co_return 0;
}

// Marks that its body ran.
Task<int> records_run(std::atomic<bool>* ran, int v) {
  ran->store(true);
  co_return v;
}

// Blocks the worker thread it runs on until `gate` opens (a deliberately synchronous wait,
// to keep a one-worker runtime busy).
Task<void> occupy_worker(std::latch* started, const Gate* gate) {
  started->count_down();
  gate->wait();
  co_return;
}

// Holds a DropCounter local while it waits on a leaf that never fires in the test.
Task<int> pending_with_local(std::atomic<std::int64_t>* drops, ManualLeaf leaf,
                             std::atomic<bool>* resumed) {
  DropCounter local(*drops);
  co_await leaf;
  resumed->store(true);
  co_return 1;
}

using spool_rt_test::await_leaf;

// A detached task: waits for the leaf, then reports through the promise.
Task<void> report_when_fired(ManualLeaf leaf, std::promise<int>* done, int v) {
  co_await leaf;
  done->set_value(v);
}

// Awaits another task's JoinHandle from inside a task; returns its value or the error text.
Task<std::string> await_other(spool::JoinHandle<int> h) {
  try {
    int v = co_await h;
    co_return "value " + std::to_string(v);
  } catch (const spool::JoinError& e) {
    co_return std::string(e.is_cancelled() ? "cancelled" : "panic");
  }
}

// Something a task owns (here: through a parameter) that keeps a clone of the task's own
// waker after the task completed, as a channel's shared state does when its receiver
// registered and then found the value. The task's frame must still be destroyed once no
// one wants its output, or task and state keep each other alive for ever.
struct KeepsAWaker {
  std::optional<spool::Waker> waker;
};
struct StoreWakerThenReady {
  explicit StoreWakerThenReady(KeepsAWaker* k) : keeper(k) {}
  KeepsAWaker* keeper;
  spool::Poll<void> poll(spool::Context& cx) {
    keeper->waker.emplace(cx.waker());
    return spool::Poll<void>::ready();
  }
};
Task<int> owns_its_own_waker(std::shared_ptr<KeepsAWaker> keeper) {
  co_await StoreWakerThenReady(keeper.get());
  co_return 3;
}

class JoinHandleAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(JoinHandleAnyFlavor);

TEST_P(JoinHandleAnyFlavor, DeliversTheValue) {
  auto rt = build();
  auto h = rt.spawn(value(99));
  EXPECT_EQ(wait(rt, h), 99);
}

TEST_P(JoinHandleAnyFlavor, DeliversAMoveOnlyValue) {
  auto rt = build();
  auto h = rt.spawn(move_only("payload"));
  std::unique_ptr<std::string> p = wait(rt, h);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, "payload");
}

TEST_P(JoinHandleAnyFlavor, VoidTaskCompletes) {
  auto rt = build();
  std::atomic<bool> flag{false};
  auto h = rt.spawn(set_flag(&flag));
  wait(rt, h);
  EXPECT_TRUE(flag.load());
}

TEST_P(JoinHandleAnyFlavor, ExceptionIsAPanicWithTheOriginalNested) {
  auto rt = build();
  auto h = rt.spawn(throws_runtime_error("boom"));
  try {
    wait(rt, h);
    FAIL() << "expected JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_exception());
    EXPECT_FALSE(e.is_cancelled());
    ASSERT_TRUE(e.exception() != nullptr);
    // Through exception():
    try {
      std::rethrow_exception(e.exception());
    } catch (const std::runtime_error& inner) {
      EXPECT_STREQ(inner.what(), "boom");
    }
    // Through std::rethrow_if_nested:
    try {
      std::rethrow_if_nested(e);
      FAIL() << "JoinError had no nested exception";
    } catch (const std::runtime_error& inner) {
      EXPECT_STREQ(inner.what(), "boom");
    }
  }
}

TEST_P(JoinHandleAnyFlavor, ExceptionAfterASuspensionKeepsItsType) {
  auto rt = build();
  ManualLeaf leaf;
  auto h = rt.spawn(throws_after_wait(leaf));
  until_pending(rt, leaf);
  leaf.fire();
  try {
    wait(rt, h);
    FAIL() << "expected JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_exception());
    EXPECT_THROW(std::rethrow_if_nested(e), std::out_of_range);
  }
}

// The task cannot be polled before abort(): a current-thread runtime polls nothing until
// block_on; a multi-thread runtime's only worker is kept busy until then.
TEST_P(JoinHandleAnyFlavor, AbortBeforeFirstPollCancels) {
  auto rt = build(1);
  std::latch started(1);
  Gate gate;
  std::optional<spool::JoinHandle<void>> blocker;
  if (is_multi_thread()) {
    blocker.emplace(rt.spawn(occupy_worker(&started, &gate)));
    started.wait();
  }
  std::atomic<bool> ran{false};
  auto h = rt.spawn(records_run(&ran, 1));
  h.abort();
  gate.open();
  try {
    wait(rt, h);
    FAIL() << "expected JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled());
    EXPECT_FALSE(e.is_exception());
    EXPECT_TRUE(e.exception() == nullptr);
  }
  if (blocker) wait(rt, *blocker);
  EXPECT_FALSE(ran.load()) << "an aborted task must never be polled";
}

TEST_P(JoinHandleAnyFlavor, AbortWhilePendingRunsLocalDestructorsAndReportsCancelled) {
  auto rt = build();
  std::atomic<std::int64_t> drops{0};
  std::atomic<bool> resumed{false};
  ManualLeaf leaf;
  auto h = rt.spawn(pending_with_local(&drops, leaf, &resumed));
  until_pending(rt, leaf);  // the local exists and the task waits on the leaf
  EXPECT_EQ(drops.load(), 0);
  EXPECT_FALSE(h.is_finished());
  h.abort();
  try {
    wait(rt, h);
    FAIL() << "expected JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled());
  }
  EXPECT_EQ(drops.load(), 1) << "the task's local must be destroyed by the cancellation";
  EXPECT_TRUE(h.is_finished());
  leaf.fire();  // waking the leaf's (dropped) waker now is harmless
  EXPECT_FALSE(resumed.load());
}

TEST_P(JoinHandleAnyFlavor, AbortWhilePendingFromInsideAnotherTask) {
  auto rt = build();
  std::atomic<std::int64_t> drops{0};
  std::atomic<bool> resumed{false};
  ManualLeaf leaf;
  auto h = rt.spawn(pending_with_local(&drops, leaf, &resumed));
  until_pending(rt, leaf);
  struct AbortThenAwait {
    static Task<std::string> run(spool::JoinHandle<int> h) {
      h.abort();
      co_return co_await await_other(std::move(h));
    }
  };
  auto outer = rt.spawn(AbortThenAwait::run(std::move(h)));
  EXPECT_EQ(wait(rt, outer), "cancelled");
  EXPECT_EQ(drops.load(), 1);
}

// The task finished before abort(): its value is still delivered.
TEST_P(JoinHandleAnyFlavor, AbortAfterCompletionIsANoOp) {
  auto rt = build();
  auto h = rt.spawn(value(5));
  if (is_multi_thread()) {
    // is_finished() is the only observable sign of completion that leaves the handle
    // unconsumed; it changes once, false -> true.
    spool_rt_test::spin_until([&] { return h.is_finished(); });
  } else {
    // A current-thread runtime runs tasks in spawn order on one thread: once `later` is
    // done, `h`'s task (which completes in its first poll) has completed too.
    auto later = rt.spawn(value(6));
    EXPECT_EQ(rt.block_on(later), 6);
  }
  ASSERT_TRUE(h.is_finished());
  h.abort();
  h.abort();
  EXPECT_EQ(wait(rt, h), 5);
}

TEST_P(JoinHandleAnyFlavor, DroppingTheHandleDetachesAndTheTaskStillCompletes) {
  auto rt = build();
  ManualLeaf leaf;
  std::promise<int> done;
  auto result = done.get_future();
  {
    auto h = rt.spawn(report_when_fired(leaf, &done, 31));
    until_pending(rt, leaf);  // certainly still running when the handle goes
  }
  leaf.fire();
  if (!is_multi_thread()) {
    // Nothing runs a current-thread runtime's tasks outside block_on: drive it until a probe,
    // queued after the woken task, ran. The detached task must have completed by then.
    EXPECT_EQ(rt.block_on(rt.spawn(value(0))), 0);
    ASSERT_EQ(result.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  }
  EXPECT_EQ(result.get(), 31);
}

// Dropped before its first poll (which only a current-thread runtime can promise).
TEST(JoinHandle, DetachedTaskCompletesOnCurrentThreadRuntime) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf leaf;
  std::promise<int> done;
  auto result = done.get_future();
  rt.spawn(report_when_fired(leaf, &done, 4)).id();  // handle dropped at once
  leaf.fire();
  auto probe = rt.spawn(value(0));  // queued after the detached task
  rt.block_on(probe);
  ASSERT_EQ(result.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(result.get(), 4);
}

// On a current-thread runtime the waiting thread, inside rt.block_on, is the one that drives.
TEST_P(JoinHandleAnyFlavor, AwaitedFromAPlainThreadWithBlockOn) {
  auto rt = build();
  ManualLeaf leaf;
  auto h = rt.spawn(throws_after_wait(leaf));
  auto v = rt.spawn(value(3));
  std::promise<std::string> outcome;
  std::thread waiter([&] {
    std::string s = "value " + std::to_string(wait(rt, v));
    try {
      wait(rt, h);
      s += ", no error";
    } catch (const spool::JoinError& e) {
      s += e.is_exception() ? ", panic" : ", cancelled";
    }
    outcome.set_value(s);
  });
  leaf.wait_pending();
  leaf.fire();
  waiter.join();
  EXPECT_EQ(outcome.get_future().get(), "value 3, panic");
}

TEST_P(JoinHandleAnyFlavor, AwaitedInsideAnotherTask) {
  auto rt = build();
  auto inner = rt.spawn(value(12));
  auto outer = rt.spawn(await_other(std::move(inner)));
  EXPECT_EQ(wait(rt, outer), "value 12");
}

TEST_P(JoinHandleAnyFlavor, IsFinishedTurnsTrueOnlyAfterCompletion) {
  auto rt = build();
  ManualLeaf leaf;
  auto h = rt.spawn(await_leaf(leaf));
  until_pending(rt, leaf);
  EXPECT_FALSE(h.is_finished());
  leaf.fire();
  wait(rt, h);
  EXPECT_TRUE(h.is_finished());  // a handle that gave its result counts as finished
}

TEST_P(JoinHandleAnyFlavor, PollingAfterTheResultWasTakenThrowsLogicError) {
  auto rt = build();
  auto h = rt.spawn(value(1));
  EXPECT_EQ(wait(rt, h), 1);
  EXPECT_THROW(wait(rt, h), std::logic_error);
}

// Counts the wake-ups that reach it (through a Waker built with Waker::from).
struct WakeCounter {
  std::atomic<int> wakes{0};
  void wake() { wakes.fetch_add(1); }
};

// A JoinHandle polled again with another waker: the completion wakes that one, not the first
// (the task's waker slot is swapped under JOIN_WAKER); a poll with the same waker again
// changes nothing. A current-thread runtime: the completion (and its wake) is over when
// block_on(probe) returns.
TEST(JoinHandle, CompletionWakesTheWakerOfTheLatestPoll) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf leaf;
  auto h = rt.spawn(await_leaf(leaf));
  auto first = std::make_shared<WakeCounter>();
  auto second = std::make_shared<WakeCounter>();
  const spool::Waker first_waker = spool::Waker::from(first);
  const spool::Waker second_waker = spool::Waker::from(second);
  spool::Context first_cx(first_waker);
  spool::Context second_cx(second_waker);
  ASSERT_TRUE(h.poll(first_cx).is_pending());
  ASSERT_TRUE(h.poll(second_cx).is_pending());
  ASSERT_TRUE(h.poll(second_cx).is_pending());
  leaf.fire();
  auto probe = rt.spawn(value(0));  // queued after the task
  rt.block_on(probe);
  EXPECT_EQ(second->wakes.load(), 1) << "the latest poll's waker must be woken";
  EXPECT_EQ(first->wakes.load(), 0) << "a replaced waker must not be woken";
  EXPECT_TRUE(h.poll(second_cx).is_ready());
}

// The frame-lifetime tests rely on a current-thread runtime's order (a multi-thread worker
// may still hold its reference to a completed task for a moment).
TEST(JoinHandle, FrameIsDestroyedOnceTheResultIsTaken) {
  auto rt = spool::Builder::current_thread().build();
  auto keeper = std::make_shared<KeepsAWaker>();
  std::weak_ptr<KeepsAWaker> watch = keeper;
  auto h = rt.spawn(owns_its_own_waker(std::move(keeper)));
  EXPECT_EQ(rt.block_on(h), 3);
  EXPECT_TRUE(watch.expired()) << "the frame (and the parameter it holds) must be gone";
}

TEST(JoinHandle, FrameIsDestroyedWhenTheHandleIsDroppedAfterCompletion) {
  auto rt = spool::Builder::current_thread().build();
  auto keeper = std::make_shared<KeepsAWaker>();
  std::weak_ptr<KeepsAWaker> watch = keeper;
  {
    auto h = rt.spawn(owns_its_own_waker(std::move(keeper)));
    EXPECT_EQ(rt.block_on(rt.spawn(value(0))), 0);  // runs `h`'s task to completion first
    ASSERT_TRUE(h.is_finished());
    EXPECT_FALSE(watch.expired()) << "the output is still wanted";
  }
  EXPECT_TRUE(watch.expired());
}

TEST(JoinHandle, DetachedTaskFrameIsDestroyedAtCompletion) {
  auto rt = spool::Builder::current_thread().build();
  auto keeper = std::make_shared<KeepsAWaker>();
  std::weak_ptr<KeepsAWaker> watch = keeper;
  rt.spawn(owns_its_own_waker(std::move(keeper))).id();  // detached before it ran
  EXPECT_EQ(rt.block_on(rt.spawn(value(0))), 0);         // it runs and completes first
  EXPECT_TRUE(watch.expired());
}

}  // namespace
