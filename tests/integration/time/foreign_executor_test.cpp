// Timers where the executor does not drive their driver: a hand-written executor with no
// reactor slot, or with another reactor in it (the driver's background thread fires the
// timer); a timer of runtime A polled by a task of runtime B; and timers that outlive their
// runtime (TimerShutdown instead of a hang) or die with it (cancelled with their task).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "spool/spool.hpp"
#include "support/eventfd_reactor.hpp"
#include "support/rt_flavor.hpp"
#include "support/sync.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Instant;
using spool::Task;
using spool_time_test::metrics;
using spool_time_test::poll_once;
using spool_time_test::run_foreign;

// --- A foreign executor (support/time_helpers.hpp: run_foreign) ---

TEST(ForeignExecutor, SleepFiresWithoutAReactorSlot) {
  auto s = spool::sleep(2ms);  // outside every runtime: the process-wide driver
  int pending = 0;
  run_foreign(s, nullptr, &pending);
  EXPECT_GE(std::chrono::steady_clock::now(), s.deadline());
  EXPECT_TRUE(s.is_elapsed());
}

// The executor's slot holds its own reactor (installed first): the Sleep cannot install its
// driver, so the background thread fires it, and the executor parks in its reactor, woken
// through the waker.
TEST(ForeignExecutor, SleepFiresWhileTheSlotHoldsAnotherReactor) {
  auto reactor = std::make_shared<spool_test::EventfdReactor>();
  spool::ReactorSlot slot;
  ASSERT_TRUE(slot.install(reactor));
  auto s = spool::sleep(2ms);
  int pending = 0;
  run_foreign(s, &slot, &pending, reactor);
  EXPECT_TRUE(s.is_elapsed());
  EXPECT_EQ(slot.hook(), reactor) << "the Sleep replaced the executor's reactor";
  // Each pending poll was followed by a park in the executor's own reactor.
  EXPECT_GE(reactor->parks(), pending);
}

// --- Timers across runtimes ---

Task<std::unique_ptr<spool::Sleep>> make_sleep(std::chrono::nanoseconds d) {
  co_return std::make_unique<spool::Sleep>(spool::sleep(d));
}

Task<void> await_sleep(spool::Sleep* s) {
  co_await *s;
  EXPECT_GE(std::chrono::steady_clock::now(), s->deadline());
}

class CrossRuntimeAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  // A Sleep made in runtime `a` is awaited by a task of runtime B (this test's flavour): B's
  // slot holds B's driver, so A's driver fires it, and only A counts it.
  void sleep_of_a_fires_for_a_task_of_b(spool::Runtime& a) {
    std::unique_ptr<spool::Sleep> s = a.block_on(make_sleep(3ms));
    auto b = build();
    wait(b, b.spawn(await_sleep(s.get())));
    EXPECT_TRUE(s->is_elapsed());
    EXPECT_EQ(a.metrics().timers_armed, 1u);
    EXPECT_EQ(a.metrics().timers_fired, 1u);
    EXPECT_EQ(b.metrics().timers_armed, 0u) << "the Sleep was armed in the wrong runtime";
  }
};
SPOOL_RT_INSTANTIATE_FLAVORS(CrossRuntimeAnyFlavor);

// Runtime A is a current-thread runtime that nothing drives afterwards: A's background
// thread fires the Sleep.
TEST_P(CrossRuntimeAnyFlavor, SleepOfRuntimeAAwaitedByATaskOfRuntimeB) {
  auto a = spool::Builder::current_thread().build();
  sleep_of_a_fires_for_a_task_of_b(a);
}

// Runtime A is a multi-thread runtime: its workers drive A's driver (no background thread).
TEST_P(CrossRuntimeAnyFlavor, SleepOfAMultiThreadRuntimeAAwaitedByATaskOfRuntimeB) {
  auto a = spool::Builder::multi_thread().worker_threads(2).build();
  sleep_of_a_fires_for_a_task_of_b(a);
}

// --- A paused runtime's timers awaited elsewhere ---

Task<Instant> clock_now() { co_return spool::time::now(); }

// An hour-long Sleep of a paused current-thread runtime that no thread runs, awaited by
// spool::block_on on this thread: no task of the runtime can run, so the paused clock
// jumps to the deadline (as the runtime's own idle thread would), instead of waiting forever.
TEST(PausedRuntimeTimerElsewhere, FiresUnderSpoolBlockOnWhileNothingRunsTheRuntime) {
  auto rt = spool_time_test::paused_runtime();
  std::unique_ptr<spool::Sleep> s = rt.block_on(make_sleep(1h));
  spool::block_on(*s);
  EXPECT_TRUE(s->is_elapsed());
  const Instant now = rt.block_on(clock_now());
  EXPECT_GE(now, s->deadline());
  EXPECT_LT(now, s->deadline() + 1ms) << "the clock jumped past the deadline's tick";
  EXPECT_EQ(rt.metrics().timers_fired, 1u);
}

// The same under an executor that has no reactor slot: the driver's background thread
// drives it. Afterwards the runtime's own block_on still moves its paused clock (the
// background thread follows while a thread runs the runtime).
TEST(PausedRuntimeTimerElsewhere, FiresUnderAForeignExecutorWhileNothingRunsTheRuntime) {
  auto rt = spool_time_test::paused_runtime();
  std::unique_ptr<spool::Sleep> s = rt.block_on(make_sleep(1h));
  int pending = 0;
  run_foreign(*s, nullptr, &pending);
  EXPECT_TRUE(s->is_elapsed());
  EXPECT_LE(pending, 1) << "the background thread fires it at once (maybe before the poll ends)";
  const Instant before = rt.block_on(clock_now());
  rt.block_on([]() -> Task<void> { co_await spool::sleep(2h); }());
  const Instant after = rt.block_on(clock_now());
  EXPECT_GE(after - before, 2h);
  EXPECT_LT(after - before, 2h + 1ms);
  EXPECT_EQ(rt.metrics().timers_fired, 2u);
}

// While another thread runs the paused runtime (its block_on root waits for a message), a
// Sleep of that runtime awaited here follows: the runtime's thread, idle, makes the clock
// jump and fires it.
Task<void> signal_then_wait(std::promise<void>* running, spool::oneshot::Receiver<int> rx) {
  running->set_value();
  EXPECT_EQ(co_await std::move(rx), 7);
}

TEST(PausedRuntimeTimerElsewhere, FiresWhileAnotherThreadRunsTheRuntime) {
  auto rt = spool_time_test::paused_runtime();
  std::unique_ptr<spool::Sleep> s = rt.block_on(make_sleep(1h));
  auto [tx, rx] = spool::oneshot::channel<int>();
  std::promise<void> running;
  std::thread driver([&rt, &running, rx = std::move(rx)]() mutable {
    rt.block_on(signal_then_wait(&running, std::move(rx)));
  });
  running.get_future().wait();
  spool::block_on(*s);
  EXPECT_TRUE(s->is_elapsed());
  tx.send(7);
  driver.join();
  EXPECT_EQ(rt.metrics().timers_fired, 1u);
}

// Jumps made from elsewhere stop at a woken task until the runtime runs it: a ticker (ten
// one-second sleeps) and a waiter (10.5 s) are armed; a thread awaits a 20 s Sleep of the
// runtime while this thread does not run it. The clock may jump to the ticker's first tick,
// but not on past it while the ticker waits to run: the waiter sees all ten ticks.
Task<void> tick(int* ticks, int n) {
  for (int i = 0; i < n; ++i) {
    co_await spool::sleep(1s);
    ++*ticks;
  }
}

Task<int> ticks_after(const int* ticks, std::chrono::nanoseconds d) {
  co_await spool::sleep(d);
  co_return *ticks;
}

TEST(PausedRuntimeTimerElsewhere, AJumpFromElsewhereWaitsForAWokenTaskToRun) {
  auto rt = spool_time_test::paused_runtime();
  int ticks = 0;  // ticker and waiter run on this thread, the only one that runs the runtime
  auto ticker = rt.spawn(tick(&ticks, 10));
  auto waiter = rt.spawn(ticks_after(&ticks, 10500ms));
  rt.block_on([]() -> Task<void> {
    while (metrics().timers_armed < 2) co_await spool::yield_now();
  }());
  std::unique_ptr<spool::Sleep> s = rt.block_on(make_sleep(20s));
  std::thread elsewhere([&s] { spool::block_on(*s); });
  // The jump to the ticker's first tick happens while nothing runs the runtime.
  spool_test::spin_until([&rt] { return rt.metrics().timers_fired >= 1; });
  EXPECT_EQ(rt.metrics().timers_fired, 1u) << "the clock jumped past a task waiting to run";
  EXPECT_EQ(rt.block_on(std::move(waiter)), 10);
  rt.block_on(std::move(ticker));
  elsewhere.join();  // nothing runs the runtime now, and no task is runnable: it jumps to 20 s
  EXPECT_TRUE(s->is_elapsed());
  EXPECT_EQ(ticks, 10);
}

// A thread waiting elsewhere for a paused runtime's timer follows while a block_on runs;
// that block_on resumes the clock and ends. The waiting thread must be woken then, to drive
// the now running clock itself (it used to follow forever: the end of a block_on woke the
// waiting threads only while the clock was paused).
Task<void> resume_once_it_waits(const std::atomic<int>* pending_polls) {
  while (pending_polls->load() < 1) co_await spool::yield_now();
  for (int i = 0; i < 1000; ++i) co_await spool::yield_now();  // it parks, and follows
  spool::time::resume();
}

TEST(PausedRuntimeTimerElsewhere, AResumeDuringABlockOnLetsTheWaitingThreadDrive) {
  auto rt = spool_time_test::paused_runtime();
  std::unique_ptr<spool::Sleep> s = rt.block_on(make_sleep(20ms));
  // Pending polls of the waiting thread: incremented (seq_cst) by it, read (seq_cst) by the
  // block_on root.
  std::atomic<int> pending_polls{0};
  std::thread elsewhere([&s, &pending_polls] {
    spool::block_on(spool::poll_fn([&](spool::Context& cx) -> spool::Poll<void> {
      if (s->poll(cx).is_ready()) return spool::Poll<void>::ready();
      pending_polls.fetch_add(1);
      return spool::pending;
    }));
  });
  rt.block_on(resume_once_it_waits(&pending_polls));
  elsewhere.join();  // 20 ms of real time, on the running clock
  EXPECT_TRUE(s->is_elapsed());
}

// A Sleep made in a runtime that is then dropped: polling it reports TimerShutdown at once.
TEST_P(CrossRuntimeAnyFlavor, SleepPolledAfterItsRuntimeWasDroppedThrows) {
  std::unique_ptr<spool::Sleep> never_polled, polled;
  {
    auto rt = build();
    never_polled = rt.block_on(make_sleep(1h));
    polled = rt.block_on(make_sleep(1h));
    rt.block_on([](spool::Sleep* s) -> Task<void> {
      EXPECT_FALSE(co_await poll_once(*s));  // armed in the runtime's driver
    }(polled.get()));
    EXPECT_EQ(rt.metrics().timers_armed, 1u);
  }
  EXPECT_THROW(spool::block_on(*never_polled), spool::TimerShutdown);
  EXPECT_FALSE(polled->is_elapsed());
  EXPECT_THROW(spool::block_on(*polled), spool::TimerShutdown);
  // A foreign executor too (no slot: it would have started a background thread).
  int pending = 0;
  EXPECT_THROW(run_foreign(*polled, nullptr, &pending), spool::TimerShutdown);
  EXPECT_EQ(pending, 0);
}

// A Sleep made by a task (on a worker, whose own count it joins) outlives its runtime as the
// driver's last owner: polling it reports TimerShutdown (under ASan: no use after free).
TEST_P(CrossRuntimeAnyFlavor, SleepMadeByATaskKeepsItsDriverAfterTheRuntimeIsDropped) {
  std::unique_ptr<spool::Sleep> s;
  {
    auto rt = build();
    s = rt.block_on(rt.spawn(make_sleep(1h)));
  }
  EXPECT_THROW(spool::block_on(*s), spool::TimerShutdown);
}

// Set (seq_cst store) by the destructor of a sleeping task's local when the task is
// cancelled; read (seq_cst) by the test after the runtime is gone.
struct DropGuard {
  std::atomic<bool>* dropped;
  ~DropGuard() { dropped->store(true); }
};

Task<void> guarded_long_sleep(std::atomic<bool>* dropped) {
  DropGuard guard{dropped};
  co_await spool::sleep(1h);
  ADD_FAILURE() << "the hour-long sleep completed";
}

// A task of runtime A awaits a long sleep when A is dropped: the task is cancelled (its
// locals destroyed, its Sleep unregistered), without a hang (and without a leak: ASan).
TEST_P(CrossRuntimeAnyFlavor, TaskSleepingWhenItsRuntimeIsDroppedIsCancelled) {
  std::atomic<bool> dropped{false};
  std::optional<spool::JoinHandle<void>> h;
  {
    auto rt = build();
    h.emplace(rt.spawn(guarded_long_sleep(&dropped)));
    if (is_multi_thread()) {
      spool_test::spin_until([&] { return rt.metrics().timers_armed == 1; });
    } else {
      rt.block_on([]() -> Task<void> {
        while (metrics().timers_armed == 0) co_await spool::yield_now();
      }());
    }
    EXPECT_FALSE(dropped.load());
  }
  EXPECT_TRUE(dropped.load());
  bool cancelled = false;
  try {
    spool::block_on(*h);
  } catch (const spool::JoinError& e) {
    cancelled = e.is_cancelled();
  }
  EXPECT_TRUE(cancelled);
}

}  // namespace
