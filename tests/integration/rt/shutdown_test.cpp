// Shutdown: pending tasks are cancelled and their frames destroyed, nothing leaks, a spawn
// after shutdown is cancelled at once, and shutdown_timeout does not wait for ever on a
// blocked spawn_blocking call. Every promise here holds on both runtime flavours
// (ShutdownAnyFlavor.<test>/MultiThread and .../CurrentThread) except "tasks never polled",
// which only a current-thread runtime (polling nothing outside block_on) can set up.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_gate.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Task;
using spool_rt_test::DropCounter;
using spool_rt_test::Gate;
using spool_rt_test::NeverReady;

// Holds a DropCounter local and waits forever.
Task<int> wait_forever(std::atomic<std::int64_t>* drops, std::latch* pending) {
  DropCounter local(*drops);
  pending->count_down();
  co_await NeverReady{};
  co_return 0;
}

// Its DropCounter parameter lives in the frame from the spawn on, polled or not.
Task<int> holds_param(DropCounter, std::atomic<bool>* ran) {
  ran->store(true);
  co_await NeverReady{};
  co_return 0;
}

using spool_rt_test::value;

// True when polling `h` once throws JoinError with is_cancelled().
template <class T>
bool reports_cancelled(spool::JoinHandle<T>& h) {
  spool::Waker waker = spool::Waker::noop();
  spool::Context cx(waker);
  try {
    (void)h.poll(cx);
    return false;  // ready with a value, or pending
  } catch (const spool::JoinError& e) {
    return e.is_cancelled();
  }
}

class ShutdownAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(ShutdownAnyFlavor);

TEST_P(ShutdownAnyFlavor, DroppingTheRuntimeDestroysEveryPendingTask) {
  constexpr std::int64_t kTasks = 100'000;
  std::atomic<std::int64_t> drops{0};
  std::latch pending(kTasks);
  std::vector<spool::JoinHandle<int>> handles;
  handles.reserve(kTasks);
  spool_rt_test::RuntimeFreed freed;
  {
    auto rt = builder().on_thread_stop(freed.probe()).build();
    for (std::int64_t i = 0; i < kTasks; ++i)
      handles.push_back(rt.spawn(wait_forever(&drops, &pending)));
    until_done(rt, pending);  // every task holds its DropCounter and waits on a leaf never fired
    EXPECT_EQ(drops.load(), 0);
    EXPECT_EQ(rt.metrics().live_tasks, static_cast<std::size_t>(kTasks));
  }
  EXPECT_EQ(drops.load(), kTasks);
  std::int64_t cancelled = 0;
  for (auto& h : handles) {
    EXPECT_TRUE(h.is_finished());
    cancelled += reports_cancelled(h) ? 1 : 0;
  }
  EXPECT_EQ(cancelled, kTasks);
  handles.clear();
  freed.wait();  // with the last task header gone, the runtime's shared state was freed too
}

TEST_P(ShutdownAnyFlavor, DetachedPendingTasksAreDestroyedToo) {
  constexpr std::int64_t kTasks = 1'000;
  std::atomic<std::int64_t> drops{0};
  std::latch pending(kTasks);
  {
    auto rt = build();
    for (std::int64_t i = 0; i < kTasks; ++i) rt.spawn(wait_forever(&drops, &pending)).id();
    until_done(rt, pending);
  }
  EXPECT_EQ(drops.load(), kTasks);
}

// Tasks queued on a current-thread runtime that never ran block_on were never polled:
// shutdown still destroys their frames.
TEST(Shutdown, NeverPolledTasksAreDestroyed) {
  constexpr std::int64_t kTasks = 1'000;
  std::atomic<std::int64_t> drops{0};
  std::atomic<bool> ran{false};
  std::vector<spool::JoinHandle<int>> handles;
  {
    auto rt = spool::Builder::current_thread().build();
    for (std::int64_t i = 0; i < kTasks; ++i)
      handles.push_back(rt.spawn(holds_param(DropCounter(drops), &ran)));
    EXPECT_EQ(drops.load(), 0);
  }
  EXPECT_EQ(drops.load(), kTasks);
  EXPECT_FALSE(ran.load());
  for (auto& h : handles) EXPECT_TRUE(reports_cancelled(h));
}

TEST_P(ShutdownAnyFlavor, SpawnAfterShutdownReportsCancelled) {
  std::atomic<std::int64_t> drops{0};
  std::atomic<bool> ran{false};
  auto rt = build();
  spool::Handle handle = rt.handle();
  rt.shutdown_timeout(1s);
  auto h = handle.spawn(holds_param(DropCounter(drops), &ran));
  EXPECT_TRUE(h.is_finished());
  EXPECT_EQ(drops.load(), 1) << "the refused task's frame is destroyed at once";
  try {
    spool::block_on(h);  // finished already: no runtime needs to run anything
    FAIL() << "expected JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled());
  }
  EXPECT_FALSE(ran.load());
  auto via_runtime = rt.spawn(value(1));
  EXPECT_TRUE(reports_cancelled(via_runtime));
}

TEST_P(ShutdownAnyFlavor, SpawnThroughAHandleThatOutlivedTheRuntimeReportsCancelled) {
  std::optional<spool::Handle> handle;
  {
    auto rt = build(1);
    handle = rt.handle();
  }
  auto h = handle->spawn(value(3));
  EXPECT_TRUE(reports_cancelled(h));
}

TEST_P(ShutdownAnyFlavor, SpawnBlockingAfterShutdownReportsCancelled) {
  auto rt = build(1);
  rt.shutdown_timeout(1s);
  std::atomic<bool> ran{false};
  auto h = rt.spawn_blocking([&] {
    ran.store(true);
    return 1;
  });
  EXPECT_TRUE(reports_cancelled(h));
  EXPECT_FALSE(ran.load());
}

TEST_P(ShutdownAnyFlavor, SpawnAfterAZeroShutdownTimeoutReportsCancelled) {
  auto rt = build();
  rt.shutdown_timeout(0s);
  auto h = rt.spawn(value(2));
  EXPECT_TRUE(reports_cancelled(h));
}

TEST_P(ShutdownAnyFlavor, ShutdownTimeoutReturnsWhileABlockingCallIsStillBlocked) {
  Gate gate;
  std::latch entered(1);
  spool_rt_test::RuntimeFreed freed;
  std::optional<spool::JoinHandle<int>> h;
  {
    auto rt = builder(1).on_thread_stop(freed.probe()).build();
    h.emplace(rt.spawn_blocking([&] {
      entered.count_down();
      gate.wait();
      return 9;
    }));
    entered.wait();
    rt.shutdown_timeout(10ms);  // returns although the call is still blocked on the gate
    EXPECT_FALSE(gate.is_open());
    EXPECT_FALSE(h->is_finished());
  }  // the destructor does not wait for the call either (shutdown already happened)
  EXPECT_FALSE(h->is_finished());
  gate.open();                        // let the call finish on its own: it delivers its value
  EXPECT_EQ(spool::block_on(*h), 9);  // the runtime is gone: a plain block_on for both
  freed.wait();  // and the left-behind thread released the runtime: nothing leaks
}

// The call left running counts as a thread left in a poll: the report was clean although a
// runtime thread ran on, detached, in a call that may use what the caller frees next.
TEST_P(ShutdownAnyFlavor, ABlockingCallLeftRunningMakesTheReportUnclean) {
  Gate gate;
  std::latch entered(1);
  std::optional<spool::JoinHandle<int>> h;
  {
    auto rt = builder(1).build();
    h.emplace(rt.spawn_blocking([&] {
      entered.count_down();
      gate.wait();
      return 9;
    }));
    entered.wait();
    spool::ShutdownReport report = rt.shutdown_timeout(0s);
    EXPECT_FALSE(report.clean());
    EXPECT_GE(report.threads_left_in_poll, 1u);  // (an idle worker may not have left yet)
    EXPECT_NE(report.left_in_poll.find("1 blocking-pool thread(s) still in a blocking-pool call"),
              std::string::npos)
        << report.left_in_poll;
  }
  gate.open();
  EXPECT_EQ(spool::block_on(*h), 9);
}

TEST_P(ShutdownAnyFlavor, QueuedBlockingCallsAreCancelled) {
  Gate gate;
  std::latch entered(1);
  std::atomic<bool> second_ran{false};
  auto rt = builder(1).max_blocking_threads(1).build();
  auto first = rt.spawn_blocking([&] {
    entered.count_down();
    gate.wait();
    return 1;
  });
  auto second = rt.spawn_blocking([&] {
    second_ran.store(true);
    return 2;
  });
  entered.wait();
  EXPECT_EQ(rt.metrics().blocking_queue_depth, 1u);
  spool::Handle handle = rt.handle();
  std::thread opener([&] {
    // Shutdown first takes the queued call out of the queue, then waits for the running
    // one: release that one only then (the queue is empty from that moment).
    spool_rt_test::spin_until([&] { return handle.metrics().blocking_queue_depth == 0; });
    gate.open();
  });
  rt.shutdown_timeout(1h);
  opener.join();
  EXPECT_TRUE(reports_cancelled(second));
  EXPECT_FALSE(second_ran.load());
  EXPECT_EQ(spool::block_on(first), 1);
}

// nanoseconds::max() is "no bound": the deadline saturates (it overflowed, UB, and then
// ended the wait for the blocking call at once), so the shutdown waits for the running call.
TEST_P(ShutdownAnyFlavor, AnUnboundedShutdownTimeoutWaitsForARunningBlockingCall) {
  Gate gate;
  std::latch entered(1);
  auto rt = builder(1).build();
  auto call = rt.spawn_blocking([&] {
    entered.count_down();
    gate.wait();
    return 1;
  });
  entered.wait();
  std::thread opener([&] { gate.open(); });
  spool::ShutdownReport report = rt.shutdown_timeout(std::chrono::nanoseconds::max());
  opener.join();
  EXPECT_TRUE(report.clean()) << report.not_drained_reason << report.left_in_poll;
  EXPECT_TRUE(call.is_finished()) << "the shutdown returned before the running call finished";
  EXPECT_EQ(spool::block_on(call), 1);
}

TEST_P(ShutdownAnyFlavor, ShutdownIsIdempotent) {
  auto rt = build(2);
  EXPECT_EQ(wait(rt, rt.spawn(value(4))), 4);
  rt.shutdown_timeout(1s);
  rt.shutdown_timeout(1s);
  spool::RuntimeMetrics m = rt.metrics();  // still readable after shutdown
  EXPECT_EQ(m.workers.size(), is_multi_thread() ? 2u : 1u);
  EXPECT_EQ(m.live_tasks, 0u);
}

TEST_P(ShutdownAnyFlavor, MovedRuntimeShutsDownOnce) {
  std::atomic<std::int64_t> drops{0};
  std::latch pending(1);
  {
    auto rt = build(1);
    rt.spawn(wait_forever(&drops, &pending)).id();
    until_done(rt, pending);
    spool::Runtime moved = std::move(rt);
    EXPECT_EQ(drops.load(), 0);
  }
  EXPECT_EQ(drops.load(), 1);
}

}  // namespace
