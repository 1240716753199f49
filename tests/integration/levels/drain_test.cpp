// Drain on close (docs/levels.md): at shutdown the tasks of complete-on-close channels run to
// completion — queued ones, ones spawned during the drain, ones waiting on an outside thread —
// and every CloseGuard is waited for; every other task is cancelled (its destructors run), and a
// spawn onto another channel during the drain is cancelled at once. shutdown_timeout bounds the
// drain and reports what was pending.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Channel;
using spool::Level;

// Counts runs to completion and destructions of the tasks that hold one.
struct Tally {
  // Incremented by tasks on the runtime's threads; read by the test after the shutdown
  // returned (which joined or waited for those threads): relaxed.
  std::atomic<int> completed{0};
  std::atomic<int> destroyed{0};
};

// A coroutine parameter that bumps `destroyed` when the task's frame is destroyed, whether
// the task ran or was cancelled before its first poll (a parameter lives in the frame from
// the start; a local only once the body runs).
struct DestroyCounter {
  Tally* tally;
  explicit DestroyCounter(Tally* t) : tally(t) {}
  DestroyCounter(DestroyCounter&& other) noexcept : tally(std::exchange(other.tally, nullptr)) {}
  ~DestroyCounter() {
    if (tally != nullptr) tally->destroyed.fetch_add(1, std::memory_order_relaxed);
  }
};

spool::Task<void> counted_body(Tally* tally, DestroyCounter) {
  co_await spool::yield_now();
  tally->completed.fetch_add(1, std::memory_order_relaxed);
}
spool::Task<void> counted(Tally* tally) { return counted_body(tally, DestroyCounter(tally)); }

spool::Builder keep_and_drop(spool::Builder b) {
  b.levels({Level{Channel("keep").complete_on_close()}, Level{"drop"}});
  return b;
}

class DrainAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(DrainAnyFlavor);

TEST_P(DrainAnyFlavor, QueuedTasksOfACompleteOnCloseChannelRunToCompletionAndTheRestAreCancelled) {
  Tally keep, drop;
  std::optional<std::latch> hold;  // outlives the runtime, whose shutdown may run its task
  {
    auto rt = keep_and_drop(builder(1)).build();
    if (is_multi_thread()) {
      // The one worker is busy while the tasks below are queued; released just before the
      // shutdown, it may or may not run some of them first (a current-thread runtime runs
      // none, so there the "drop" tasks are certainly cancelled unrun).
      hold.emplace(1);
      (void)rt.spawn_on(rt.channel("keep"),
                        spool::poll_fn([&](spool::Context&) -> spool::Poll<void> {
                          hold->wait();
                          return spool::Poll<void>::ready();
                        }));
    }
    for (int i = 0; i < 10; ++i) {
      (void)rt.spawn_on(rt.channel("keep"), counted(&keep));
      (void)rt.spawn_on(rt.channel("drop"), counted(&drop));
    }
    if (hold) hold->count_down();
    // (A current-thread runtime runs nothing outside block_on: all 20 are queued here.)
  }
  EXPECT_EQ(keep.completed.load(std::memory_order_relaxed), 10);
  EXPECT_EQ(keep.destroyed.load(std::memory_order_relaxed), 10);
  EXPECT_EQ(drop.destroyed.load(std::memory_order_relaxed), 10);
  if (!is_multi_thread()) {
    EXPECT_EQ(drop.completed.load(std::memory_order_relaxed), 0);
  }
}

spool::Task<void> chain(Tally* tally, int left,
                        std::optional<spool::JoinHandle<void>>* dropped_spawn) {
  tally->completed.fetch_add(1, std::memory_order_relaxed);
  if (left > 0) {
    (void)spool::spawn(chain(tally, left - 1, dropped_spawn));  // inherits "keep"
    co_return;
  }
  // The last link spawns onto "drop" during the drain: cancelled at once.
  dropped_spawn->emplace(spool::spawn_on(spool::Handle::current().channel("drop"), counted(tally)));
}

spool::Task<void> wait_for_value(spool::oneshot::Receiver<int> rx, std::atomic<int>* got) {
  got->store(co_await std::move(rx), std::memory_order_relaxed);
}

// A coroutine parameter that counts `latch` down when the task's frame is destroyed.
struct CountDownOnDestroy {
  std::latch* latch;
  explicit CountDownOnDestroy(std::latch* l) : latch(l) {}
  CountDownOnDestroy(CountDownOnDestroy&& other) noexcept
      : latch(std::exchange(other.latch, nullptr)) {}
  ~CountDownOnDestroy() {
    if (latch != nullptr) latch->count_down();
  }
};

spool::Task<void> wait_forever(CountDownOnDestroy) {
  spool::Notify never;
  co_await never.notified();  // only the drain's cancellation ends this task
}

// Runs the chain once `rx` gives a value: the test sends it once the drain has begun.
spool::Task<void> chain_after(spool::oneshot::Receiver<int> rx, Tally* tally, int left,
                              std::optional<spool::JoinHandle<void>>* dropped_spawn) {
  (void)co_await std::move(rx);
  co_await chain(tally, left, dropped_spawn);
}

TEST_P(DrainAnyFlavor, TasksSpawnedOntoTheChannelDuringTheDrainRunAndOtherSpawnsAreCancelled) {
  Tally tally;
  std::optional<spool::JoinHandle<void>> dropped;
  std::latch drain_began(1);
  std::thread outside;
  {
    auto rt = keep_and_drop(builder()).build();
    auto [tx, rx] = spool::oneshot::channel<int>();
    (void)rt.spawn_on(rt.channel("keep"), chain_after(std::move(rx), &tally, 5, &dropped));
    (void)rt.spawn_on(rt.channel("drop"), wait_forever(CountDownOnDestroy(&drain_began)));
    outside = std::thread([&, tx = std::move(tx)]() mutable {
      drain_began.wait();  // the drain cancelled the "drop" task: the chain runs in the drain
      (void)tx.send(1);
    });
  }
  outside.join();
  EXPECT_EQ(tally.completed.load(std::memory_order_relaxed), 6);
  ASSERT_TRUE(dropped.has_value());
  ASSERT_TRUE(dropped->is_finished());
  try {
    spool::block_on(std::move(*dropped));
    FAIL() << "the spawn onto a draining runtime's other channel was not cancelled";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled());
  }
}

TEST_P(DrainAnyFlavor, TheShutdownWaitsForATaskThatAnOutsideThreadWakesAndForCloseGuards) {
  // got: written by the keep task, read after the shutdown returned (relaxed).
  std::atomic<int> got{0};
  Tally late;
  std::latch drain_began(1);
  spool::ShutdownReport report;
  {
    auto rt = keep_and_drop(builder()).build();
    auto [tx, rx] = spool::oneshot::channel<int>();
    (void)rt.spawn_on(rt.channel("keep"), wait_for_value(std::move(rx), &got));
    (void)rt.spawn_on(rt.channel("drop"), wait_forever(CountDownOnDestroy(&drain_began)));
    spool::Handle handle = rt.handle();
    spool::CloseGuard guard = handle.close_guard();
    std::thread outside([&, tx = std::move(tx), guard = std::move(guard)]() mutable {
      drain_began.wait();  // the drain cancelled the "drop" task: the shutdown is waiting
      // A spawn onto the draining channel is still accepted while the guard holds the drain.
      (void)handle.spawn_on(handle.channel("keep"), counted(&late));
      (void)tx.send(42);
      guard.release();
    });
    report = rt.shutdown_timeout(std::chrono::hours(1));
    outside.join();
  }
  EXPECT_TRUE(report.drained) << report.not_drained_reason;
  EXPECT_EQ(got.load(std::memory_order_relaxed), 42);
  EXPECT_EQ(late.completed.load(std::memory_order_relaxed), 1);
}

TEST_P(DrainAnyFlavor, ShutdownTimeoutReportsTheTasksStillPendingAndCancelsThem) {
  Tally tally;
  spool::ShutdownReport report;
  spool::Notify never;
  {
    auto rt = keep_and_drop(builder()).build();
    auto stuck = [](Tally* t, spool::Notify* n, DestroyCounter) -> spool::Task<void> {
      co_await n->notified();
      t->completed.fetch_add(1, std::memory_order_relaxed);
    };
    (void)rt.spawn_on(rt.channel("keep"), stuck(&tally, &never, DestroyCounter(&tally)));
    report = rt.shutdown_timeout(20ms);
  }
  EXPECT_FALSE(report.drained);
  EXPECT_EQ(report.pending_tasks, 1u);
  EXPECT_EQ(report.pending_guards, 0u);
  EXPECT_NE(report.pending.find("[keep]"), std::string::npos) << report.pending;
  EXPECT_NE(report.not_drained_reason.find("timeout"), std::string::npos);
  EXPECT_EQ(tally.completed.load(std::memory_order_relaxed), 0);
  EXPECT_EQ(tally.destroyed.load(std::memory_order_relaxed), 1);
}

TEST_P(DrainAnyFlavor, AGuardHeldPastTheTimeoutIsReported) {
  spool::ShutdownReport report;
  spool::ShutdownReport again;
  spool::CloseGuard guard;
  {
    auto rt = builder().build();  // no levels: guards are waited for all the same
    guard = rt.handle().close_guard();
    EXPECT_TRUE(guard.is_held());
    report = rt.shutdown_timeout(20ms);
    again = rt.shutdown_timeout(20ms);  // shut down already: the first call's report
  }
  EXPECT_FALSE(report.drained);
  EXPECT_EQ(report.pending_guards, 1u);
  EXPECT_FALSE(again.drained);
  EXPECT_EQ(again.pending_guards, 1u);
  EXPECT_EQ(again.not_drained_reason, report.not_drained_reason);
  guard.release();
  EXPECT_FALSE(guard.is_held());
}

TEST_P(DrainAnyFlavor, WithoutCompleteOnCloseChannelsOrGuardsTheShutdownReportsDrained) {
  auto rt = builder().levels({Level{"a"}, Level{"b"}}).build();
  spool::ShutdownReport report = rt.shutdown_timeout(1s);
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.pending_tasks, 0u);
}

}  // namespace

namespace {

spool::Task<void> blocking_after(spool::oneshot::Receiver<int> rx, std::atomic<int>* result) {
  (void)co_await std::move(rx);  // sent once the drain has begun
  try {
    result->store(co_await spool::spawn_blocking([] { return 7; }), std::memory_order_relaxed);
  } catch (const spool::JoinError& e) {
    result->store(e.is_cancelled() ? -1 : -2, std::memory_order_relaxed);
  }
}

TEST(Drain, ABlockingCallOfADrainedTaskDuringTheDrainRuns) {
  // result: written by the keep task, read after the shutdown returned (relaxed).
  std::atomic<int> result{0};
  std::latch drain_began(1);
  spool::ShutdownReport report;
  {
    auto rt = keep_and_drop(spool::Builder::multi_thread().worker_threads(2)).build();
    auto [tx, rx] = spool::oneshot::channel<int>();
    (void)rt.spawn_on(rt.channel("keep"), blocking_after(std::move(rx), &result));
    (void)rt.spawn_on(rt.channel("drop"), wait_forever(CountDownOnDestroy(&drain_began)));
    std::thread outside([&, tx = std::move(tx)]() mutable {
      drain_began.wait();
      (void)tx.send(1);
    });
    report = rt.shutdown_timeout(std::chrono::hours(1));
    outside.join();
  }
  EXPECT_TRUE(report.drained) << report.not_drained_reason;
  EXPECT_EQ(result.load(std::memory_order_relaxed), 7) << "-1: the blocking call was cancelled";
}

TEST(Drain, AMultiThreadRuntimeDrainsWhenShutDownInsideAnotherBlockOn) {
  // got: written by the keep task, read after the shutdown returned (relaxed).
  std::atomic<int> got{0};
  std::latch drain_began(1);
  spool::ShutdownReport report;
  std::thread outside;
  spool::block_on([&]() -> spool::Task<void> {
    auto rt = keep_and_drop(spool::Builder::multi_thread().worker_threads(1)).build();
    auto [tx, rx] = spool::oneshot::channel<int>();
    (void)rt.spawn_on(rt.channel("keep"), wait_for_value(std::move(rx), &got));
    (void)rt.spawn_on(rt.channel("drop"), wait_forever(CountDownOnDestroy(&drain_began)));
    outside = std::thread([&, tx = std::move(tx)]() mutable {
      drain_began.wait();
      (void)tx.send(5);
    });
    report = rt.shutdown_timeout(std::chrono::hours(1));
    co_return;
  }());
  outside.join();
  EXPECT_TRUE(report.drained) << report.not_drained_reason;
  EXPECT_EQ(got.load(std::memory_order_relaxed), 5);
}

TEST(Drain, APausedClockDoesNotCutTheDrainShort) {
  // The drain's deadline is in real time: a paused clock that jumps ahead whenever every task
  // waits must not make it pass while an outside guard holder still works.
  std::atomic<int> got{0};  // written by the keep task, read after the shutdown (relaxed)
  std::latch drain_began(1);
  spool::ShutdownReport report;
  {
    auto rt = keep_and_drop(spool::Builder::current_thread().start_paused(true)).build();
    auto [tx, rx] = spool::oneshot::channel<int>();
    (void)rt.spawn_on(rt.channel("keep"), wait_for_value(std::move(rx), &got));
    (void)rt.spawn_on(rt.channel("drop"), wait_forever(CountDownOnDestroy(&drain_began)));
    spool::CloseGuard guard = rt.handle().close_guard();
    std::thread outside([&, tx = std::move(tx), guard = std::move(guard)]() mutable {
      drain_began.wait();
      (void)tx.send(42);
      guard.release();
    });
    report = rt.shutdown_timeout(std::chrono::hours(1));
    outside.join();
  }
  EXPECT_TRUE(report.drained) << report.not_drained_reason;
  EXPECT_EQ(got.load(std::memory_order_relaxed), 42);
}

TEST(Drain, ShutdownTimeoutReturnsWhileTheOnlyWorkerIsStuckInADrainedTasksPoll) {
  // If the drain waited for the stuck poll, shutdown_timeout would never return: the poll
  // ends only once it has. The latches are shared with the poll, which the shutdown leaves
  // running on its (detached) thread past this test's end.
  auto stuck = std::make_shared<std::latch>(1);
  auto release = std::make_shared<std::latch>(1);
  spool::ShutdownReport report;
  {
    auto rt = keep_and_drop(spool::Builder::multi_thread().worker_threads(1)).build();
    (void)rt.spawn_on(rt.channel("keep"), spool::poll_fn([stuck, release](spool::Context&) {
                        stuck->count_down();
                        release->wait();
                        return spool::Poll<void>::ready();
                      }));
    stuck->wait();
    report = rt.shutdown_timeout(20ms);
    release->count_down();
  }
  EXPECT_FALSE(report.drained);
  EXPECT_EQ(report.pending_tasks, 1u);
  EXPECT_NE(report.pending.find("running"), std::string::npos) << report.pending;
}

}  // namespace
