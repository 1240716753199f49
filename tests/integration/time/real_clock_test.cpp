// Timers on the real clock. No timing thresholds: the tests check completion, the "never
// early" rule (the clock reads at least the deadline once a Sleep is ready), where the
// executing thread parked, and exact counters.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

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

// Polls an hour-long Sleep (pending at its first poll, whatever the machine's speed: it
// installs its driver then), then offers the Context another reactor, which must be
// refused, then waits for `sleep`.
class OfferReactorAfterSleep {
 public:
  OfferReactorAfterSleep(spool::Sleep sleep, std::shared_ptr<spool::ReactorHook> other)
      : installer_(spool::sleep(1h)), sleep_(std::move(sleep)), other_(std::move(other)) {}
  spool::Poll<void> poll(spool::Context& cx) {
    EXPECT_TRUE(installer_.poll(cx).is_pending());
    ++polls_;
    if (cx.install_reactor(other_)) ++accepted_;
    if (cx.reactor() == nullptr || cx.reactor() == other_.get()) ++slot_not_driver_;
    return sleep_.poll(cx);
  }
  int polls() const { return polls_; }
  int accepted() const { return accepted_; }
  int slot_not_driver() const { return slot_not_driver_; }
  Instant deadline() const { return sleep_.deadline(); }

 private:
  spool::Sleep installer_;
  spool::Sleep sleep_;
  std::shared_ptr<spool::ReactorHook> other_;
  int polls_ = 0, accepted_ = 0, slot_not_driver_ = 0;
};

// spool::block_on outside every runtime: the Sleep (on the process-wide driver) installs
// that driver in block_on's slot, so block_on parks in the time driver, not in `other`.
TEST(RealClock, BlockOnOutsideARuntimeParksInTheTimeDriver) {
  auto other = std::make_shared<spool_test::EventfdReactor>();
  OfferReactorAfterSleep fut(spool::sleep(5ms), other);
  spool::block_on(fut);
  EXPECT_GE(std::chrono::steady_clock::now(), fut.deadline());
  EXPECT_GE(fut.polls(), 1);
  EXPECT_EQ(fut.accepted(), 0) << "block_on's slot did not hold the time driver";
  EXPECT_EQ(fut.slot_not_driver(), 0);
  EXPECT_EQ(other->parks(), 0);
}

TEST(RealClock, BlockOnOfAPlainSleepCompletes) {
  const Instant deadline = spool::time::now() + 5ms;
  spool::block_on(spool::sleep_until(deadline));
  EXPECT_GE(spool::time::now(), deadline);
}

class RealClockAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(RealClockAnyFlavor);

Task<void> sleep_1ms() {
  const Instant deadline = spool::time::now() + 1ms;
  co_await spool::sleep_until(deadline);
  EXPECT_GE(spool::time::now(), deadline) << "a timer fired early";
}

Task<void> ten_sleeps_in_tasks() {
  std::vector<spool::JoinHandle<void>> hs;
  for (int i = 0; i < 10; ++i) hs.push_back(spool::spawn(sleep_1ms()));
  for (auto& h : hs) co_await h;
}

// Every armed timer fires exactly once; the runtime's threads parked in its driver (which
// is the only place a real-clock timer fires).
TEST_P(RealClockAnyFlavor, TimersFiredAndArmedCountExactly) {
  auto rt = build();
  rt.block_on(ten_sleeps_in_tasks());
  spool::RuntimeMetrics m = rt.metrics();
  EXPECT_EQ(m.timers_armed, 10u);
  EXPECT_EQ(m.timers_fired, 10u);
  EXPECT_EQ(m.timers_cancelled, 0u);
  EXPECT_GE(m.driver_parks, 1u);
  // The root future of block_on itself: armed in the runtime's driver too.
  const std::uint64_t parks_before = m.driver_parks;
  rt.block_on(sleep_1ms());
  m = rt.metrics();
  EXPECT_EQ(m.timers_armed, 11u);
  EXPECT_EQ(m.timers_fired, 11u);
  if (!is_multi_thread()) {
    // The block_on thread drives the runtime: it parked in the driver to fire the timer.
    EXPECT_GT(m.driver_parks, parks_before);
  }
}

// A current-thread runtime that never ran: no parks. Its first timer needs one.
// One wheel shared by every worker (Builder::timer_wheels(1)): the timers that all workers
// arm, and cancel, count exactly as with one wheel per worker.
TEST(RealClock, OneSharedWheelServesEveryWorker) {
  auto rt = spool::Builder::multi_thread().worker_threads(3).timer_wheels(1).build();
  constexpr int kTasks = 60;
  std::vector<spool::JoinHandle<void>> handles;
  for (int i = 0; i < kTasks; ++i) {
    handles.push_back(rt.spawn([](int i) -> Task<void> {
      auto s = spool::sleep(std::chrono::microseconds(100 * (i % 7) + 1));
      co_await s;
      EXPECT_GE(std::chrono::steady_clock::now(), s.deadline());
      auto never = spool::sleep(1h);
      EXPECT_FALSE(co_await spool_time_test::poll_once(never));  // armed, then cancelled
    }(i)));
  }
  for (auto& h : handles) spool::block_on(h);
  const spool::RuntimeMetrics m = rt.metrics();
  EXPECT_EQ(m.timer_wheels, 1u);
  EXPECT_EQ(spool::Builder::multi_thread().worker_threads(3).build().metrics().timer_wheels, 3u)
      << "the default: one wheel per worker";
  EXPECT_EQ(spool::Builder::current_thread().build().metrics().timer_wheels, 1u);
  EXPECT_EQ(m.timers_armed, 2u * kTasks);
  EXPECT_EQ(m.timers_fired, static_cast<std::uint64_t>(kTasks));
  EXPECT_EQ(m.timers_cancelled, static_cast<std::uint64_t>(kTasks));
}

TEST(RealClock, CurrentThreadDriverParksCountFromZero) {
  auto rt = spool::Builder::current_thread().build();
  EXPECT_EQ(rt.metrics().driver_parks, 0u);
  rt.block_on(sleep_1ms());
  EXPECT_GE(rt.metrics().driver_parks, 1u);
  EXPECT_EQ(rt.metrics().timers_fired, 1u);
}

Task<void> past_deadlines_real() {
  const spool::Waker noop = spool::Waker::noop();
  spool::Context cx(noop);
  auto past = spool::sleep_until(spool::time::now() - 1s);
  auto zero = spool::sleep(0ms);
  auto negative = spool::sleep(-1ms);
  EXPECT_TRUE(past.poll(cx).is_ready());
  EXPECT_TRUE(zero.poll(cx).is_ready());
  EXPECT_TRUE(negative.poll(cx).is_ready());
  co_await spool::sleep(0ms);
  EXPECT_EQ(metrics().timers_armed, 0u);
}

TEST_P(RealClockAnyFlavor, PastDeadlinesAreReadyAtTheFirstPollWithoutArming) {
  auto rt = build();
  rt.block_on(past_deadlines_real());
  EXPECT_EQ(rt.metrics().timers_armed, 0u);
}

// A task on a runtime (a worker of either flavour) polls with a slot that holds the runtime's
// driver: its Sleep finds that driver installed, and a foreign reactor offered to the same
// Context is refused and never parked in.
Task<void> offer_reactor_in_a_task(std::shared_ptr<spool::ReactorHook> other) {
  OfferReactorAfterSleep fut(spool::sleep(5ms), std::move(other));
  co_await fut;
  EXPECT_GE(fut.polls(), 1);
  EXPECT_EQ(fut.accepted(), 0) << "the task's slot did not hold the runtime's driver";
  EXPECT_EQ(fut.slot_not_driver(), 0);
}

TEST_P(RealClockAnyFlavor, ATaskSlotHoldsTheRuntimesDriver) {
  auto rt = build();
  auto other = std::make_shared<spool_test::EventfdReactor>();
  wait(rt, rt.spawn(offer_reactor_in_a_task(other)));
  rt.block_on(offer_reactor_in_a_task(other));  // the block_on root's slot too
  EXPECT_EQ(other->parks(), 0);
}

// The maintenance poll: while a task keeps the runtime busy (always runnable, so no thread
// ever parks idle in the driver), a timer still fires. Without the poll this test hangs; the
// cap on the busy loop only ends a failing run.
Task<void> busy_until(const bool* done) {
  for (long i = 0; !*done && i < 100'000'000; ++i) co_await spool::yield_now();
  EXPECT_TRUE(*done) << "the timer never fired while the runtime was busy";
}

Task<void> sleep_then_set(bool* done) {
  co_await spool::sleep(1ms);
  *done = true;
}

TEST(RealClock, ABusyCurrentThreadRuntimeStillFiresTimers) {
  auto rt = spool::Builder::current_thread().build();
  bool done = false;  // one thread: the runtime's
  auto sleeper = rt.spawn(sleep_then_set(&done));
  auto busy = rt.spawn(busy_until(&done));
  rt.block_on(std::move(busy));
  rt.block_on(std::move(sleeper));
}

// The same with the block_on root itself busy (nothing else runnable): the root's own wakes
// must not starve the timers.
TEST(RealClock, ABusyBlockOnRootStillFiresTimers) {
  auto rt = spool::Builder::current_thread().build();
  bool done = false;
  auto sleeper = rt.spawn(sleep_then_set(&done));
  rt.block_on(busy_until(&done));
  rt.block_on(std::move(sleeper));
}

// --- Who drives the timers when the driving thread changes ---

// Blocks its worker (a synchronous wait, on purpose) from the moment its timer fires until
// `released` is set.
Task<void> sleep_then_block(std::chrono::nanoseconds d, std::shared_future<void> released) {
  co_await spool::sleep(d);
  released.wait();
}

Task<void> sleep_then_release(std::chrono::nanoseconds d, std::promise<void>* release) {
  co_await spool::sleep(d);
  release->set_value();
}

// Two workers, both idle: one parks in the driver, the other on its own parker. The first
// timer wakes its task on the worker that fires it, which leaves the driver for the task —
// and then blocks — while the second timer waits. The driver must pass to the parked worker
// (nothing else would wake it: no new work comes and the blocked worker runs no
// maintenance), which fires the second timer, whose task releases the first.
TEST(RealClock, AWorkerThatLeavesTheDriverForWorkHandsItToAParkedWorker) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::promise<void> release;
  auto blocker = rt.spawn(sleep_then_block(5ms, release.get_future().share()));
  auto releaser = rt.spawn(sleep_then_release(30ms, &release));
  spool::block_on(blocker);
  spool::block_on(releaser);
  EXPECT_EQ(rt.metrics().timers_fired, 2u);
}

Task<std::unique_ptr<spool::Sleep>> sleep_of_the_runtime(std::chrono::nanoseconds d) {
  co_return std::make_unique<spool::Sleep>(spool::sleep(d));
}

Task<void> sleep_then_send(std::chrono::nanoseconds d, spool::oneshot::Sender<int> tx) {
  co_await spool::sleep(d);
  tx.send(1);
}

// A hook park (spool::block_on of the runtime's Sleep on another thread) holds the driver when
// the runtime's thread goes idle, which then parks on its own parker. When it leaves —
// with no timer armed any more — it must still send that thread back into the driver: a timer
// armed later by another block_on thread (which never parks in the driver) has nobody else
// to fire it.
TEST(RealClock, ABlockOnLeavingTheDriverSendsTheRuntimesThreadBackIntoIt) {
  auto rt = spool::Builder::current_thread().build();
  std::unique_ptr<spool::Sleep> s = rt.block_on(sleep_of_the_runtime(50ms));
  std::thread face([&s] { spool::block_on(*s); });
  spool_test::spin_until([&rt] { return rt.metrics().driver_parks >= 1; });  // it holds it
  auto [tx, rx] = spool::oneshot::channel<int>();
  std::thread runtime_thread([&rt, rx = std::move(rx)]() mutable {
    EXPECT_EQ(rt.block_on(std::move(rx)), 1);  // drives; idle, it parks on its own parker
  });
  face.join();
  rt.block_on(sleep_then_send(10ms, std::move(tx)));  // does not drive: the other one does
  runtime_thread.join();
}

// Records which thread ran the task after its timer fired.
Task<void> arm_signal_sleep(spool::oneshot::Sender<bool> armed, std::thread::id* woke_on) {
  auto s = spool::sleep(20ms);
  EXPECT_FALSE(co_await spool_time_test::poll_once(s));
  armed.send(true);
  co_await s;
  *woke_on = std::this_thread::get_id();
}

Task<void> spawn_and_wait_armed(std::optional<spool::JoinHandle<void>>* task,
                                std::thread::id* woke_on) {
  auto [armed_tx, armed_rx] = spool::oneshot::channel<bool>();
  task->emplace(spool::spawn(arm_signal_sleep(std::move(armed_tx), woke_on)));
  EXPECT_TRUE(co_await std::move(armed_rx));
}

// A current-thread runtime: a task arms its timer while this thread has the core (its block_on
// returns once the timer is armed), then a second thread's block_on takes the core
// and the timer fires there, running the task on that thread.
TEST(RealClock, TheTimerOfACurrentThreadTaskFiresAfterTheThreadInTheDriverChanged) {
  auto rt = spool::Builder::current_thread().build();
  std::optional<spool::JoinHandle<void>> task;
  std::thread::id woke_on;
  rt.block_on(spawn_and_wait_armed(&task, &woke_on));
  std::thread::id second_id;
  std::thread second([&] {
    second_id = std::this_thread::get_id();
    rt.block_on(std::move(*task));
  });
  second.join();
  EXPECT_EQ(woke_on, second_id);
  EXPECT_EQ(rt.metrics().timers_fired, 1u);
}

}  // namespace
