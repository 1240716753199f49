// The paused test clock (Builder::start_paused): timers fire in deadline order, each alone
// in its tick at its very deadline, and those sharing a tick together at the latest of them;
// equal deadlines fire in one advance; far-future and past deadlines; Sleep::reset; and
// auto-advance, which moves the clock only when every task waits and no blocking call runs.
// Every assertion is on spool::time::now() and on the order of events, never on real time.
//
// What the implementation guarantees: the deadlines of one tick (1 ms by default) fire once
// the clock has passed all of them, so deadline <= now <= the end of the deadline's tick when
// a timer wakes; auto-advance jumps to that instant. The tick grid starts where a
// start_paused clock starts.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_gate.hpp"
#include "support/sync.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Instant;
using spool::Task;
using spool_time_test::metrics;
using spool_time_test::paused_runtime;
using spool_time_test::poll_once;

// One task's wake-up: which timer, and the clock when it woke.
struct Woke {
  int index;
  Instant at;
};

Task<void> sleep_and_log(Instant deadline, int index, std::vector<Woke>* log) {
  co_await spool::sleep_until(deadline);
  log->push_back({index, spool::time::now()});
}

// Timer i's offset from the start: increasing in i, on distinct ticks, a quarter of them
// on a tick boundary and the rest between two.
std::chrono::nanoseconds offset_of(int i) {
  return std::chrono::milliseconds(2 * i + 1) + std::chrono::microseconds(250 * (i % 4));
}

std::vector<int> shuffled(int n, unsigned seed) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  return order;
}

Task<void> many_timers_auto_advance(int n, std::vector<Woke>* log, Instant* start) {
  *start = spool::time::now();
  std::vector<spool::JoinHandle<void>> tasks;
  for (int i : shuffled(n, 42))
    tasks.push_back(spool::spawn(sleep_and_log(*start + offset_of(i), i, log)));
  for (auto& t : tasks) co_await t;
}

// 200 timers spawned in shuffled order wake sorted by deadline, each (alone in its tick) at
// its very deadline, with the clock jumping from one to the next by itself.
TEST(PausedClock, ManyTimersWakeInDeadlineOrderAtTheirDeadlines) {
  constexpr int kTimers = 200;
  auto rt = paused_runtime();
  std::vector<Woke> log;
  Instant start;
  rt.block_on(many_timers_auto_advance(kTimers, &log, &start));
  ASSERT_EQ(log.size(), static_cast<std::size_t>(kTimers));
  for (int k = 0; k < kTimers; ++k) {
    const auto& w = log[static_cast<std::size_t>(k)];
    EXPECT_EQ(w.index, k) << "wake-up #" << k;
    EXPECT_EQ(w.at, start + offset_of(w.index)) << "timer " << w.index;
  }
  EXPECT_EQ(rt.metrics().timers_armed, static_cast<std::uint64_t>(kTimers));
  EXPECT_EQ(rt.metrics().timers_fired, static_cast<std::uint64_t>(kTimers));
  EXPECT_EQ(rt.metrics().timers_cancelled, 0u);
}

// Advances 1 ms at a time: after each step exactly the timers whose tick came have fired
// (a timer of whole milliseconds fires at the advance that reaches its deadline exactly).
// A spawned task advances: it re-queues itself behind the tasks the advance woke.
Task<void> step_by_step(int n, const std::vector<Woke>* log, Instant start) {
  for (int ms = 1; ms <= n; ++ms) {
    co_await spool::time::advance(1ms);
    EXPECT_EQ(spool::time::now() - start, std::chrono::milliseconds(ms));
    EXPECT_EQ(log->size(), static_cast<std::size_t>(ms)) << "after advancing to " << ms << " ms";
    if (!log->empty()) {
      EXPECT_EQ(log->back().index, ms - 1);
      EXPECT_EQ(log->back().at - start, std::chrono::milliseconds(ms));
    }
  }
}

Task<void> many_timers_by_hand(int n, std::vector<Woke>* log) {
  const Instant start = spool::time::now();
  std::vector<spool::JoinHandle<void>> tasks;
  for (int i : shuffled(n, 7)) {
    tasks.push_back(spool::spawn(sleep_and_log(start + std::chrono::milliseconds(i + 1), i, log)));
  }
  co_await spool::spawn(step_by_step(n, log, start));
  for (auto& t : tasks) co_await t;
}

TEST(PausedClock, AdvanceFiresExactlyTheTimersThatCameDue) {
  constexpr int kTimers = 50;
  auto rt = paused_runtime();
  std::vector<Woke> log;
  rt.block_on(many_timers_by_hand(kTimers, &log));
  EXPECT_EQ(log.size(), static_cast<std::size_t>(kTimers));
}

// Sleep d, advance exactly d: the sleep fires in that advance (not one tick later).
Task<void> sleep_then_advance_exactly(bool* fired) {
  const Instant start = spool::time::now();
  auto sleeper = spool::spawn([](bool* f) -> Task<void> {
    co_await spool::sleep(10ms);
    *f = true;
  }(fired));
  co_await spool::yield_now();  // the sleeper runs and arms its timer
  co_await spool::time::advance(9ms);
  EXPECT_FALSE(*fired);
  co_await spool::time::advance(1ms);
  EXPECT_TRUE(*fired) << "sleep(10ms) did not fire when the clock was advanced by 10 ms";
  EXPECT_EQ(spool::time::now() - start, 10ms);
  co_await sleeper;
}

TEST(PausedClock, AdvanceByTheSleepDurationFiresIt) {
  auto rt = paused_runtime();
  bool fired = false;
  rt.block_on(sleep_then_advance_exactly(&fired));
  EXPECT_TRUE(fired);
}

// On 100 µs ticks: the timers of one tick fire together at the latest of their deadlines
// (the tick (200, 300] µs: at 250 µs, not before it nor at the tick's end); one alone in its
// tick fires at its deadline; a cancelled timer still counts as the latest of its tick
// (the wheel does not look for the next latest), but its tick's others fire no later than
// the tick's end.
Task<void> sleep_until_and_log(Instant deadline, int index, std::vector<Woke>* log) {
  co_await spool::sleep_until(deadline);
  log->push_back({index, spool::time::now()});
}

Task<void> one_tick_fires_as_one() {
  const Instant start = spool::time::now();
  std::vector<Woke> log;
  std::vector<spool::JoinHandle<void>> tasks;
  for (const auto& [index, offset] :
       {std::pair{0, 220us}, std::pair{1, 250us}, std::pair{2, 330us}}) {
    tasks.push_back(spool::spawn(sleep_until_and_log(start + offset, index, &log)));
  }
  // Cancelled: armed for 460 µs, then dropped, beside a timer of 410 µs.
  auto cancelled = spool::spawn([]() -> Task<void> { co_await spool::sleep(460us); }());
  tasks.push_back(spool::spawn(sleep_until_and_log(start + 410us, 3, &log)));
  co_await spool::yield_now();  // every task arms its timer
  cancelled.abort();
  for (auto& t : tasks) co_await t;
  EXPECT_EQ(log.size(), 4u);
  if (log.size() != 4) co_return;
  EXPECT_EQ(log[0].at - start, 250us);
  EXPECT_EQ(log[1].at - start, 250us);
  EXPECT_EQ(std::set<int>({log[0].index, log[1].index}), std::set<int>({0, 1}));
  EXPECT_EQ(log[2].index, 2);
  EXPECT_EQ(log[2].at - start, 330us);
  EXPECT_EQ(log[3].index, 3);
  EXPECT_GE(log[3].at - start, 410us);
  EXPECT_LE(log[3].at - start, 500us);
}

TEST(PausedClock, TimersOfOneTickFireTogetherAtTheLatestDeadline) {
  auto rt = spool::Builder::current_thread().start_paused(true).timer_resolution(100us).build();
  rt.block_on(one_tick_fires_as_one());
}

// --- Equal deadlines ---

Task<void> sleep_until_and_count(Instant deadline, int* woken, std::vector<Instant>* at) {
  co_await spool::sleep_until(deadline);
  ++*woken;
  at->push_back(spool::time::now());
}

Task<void> advance_around(Instant deadline, const int* woken, int n) {
  co_await spool::time::advance(9ms);
  EXPECT_EQ(*woken, 0) << "a timer fired a millisecond early";
  co_await spool::time::advance(1ms);
  EXPECT_EQ(*woken, n) << "not every timer with the same deadline fired in the same advance";
  EXPECT_EQ(spool::time::now() - deadline, 0ms);
}

Task<void> equal_deadlines(int n, int* woken, std::vector<Instant>* at) {
  const Instant deadline = spool::time::now() + 10ms;
  std::vector<spool::JoinHandle<void>> tasks;
  for (int i = 0; i < n; ++i)
    tasks.push_back(spool::spawn(sleep_until_and_count(deadline, woken, at)));
  co_await spool::spawn(advance_around(deadline, woken, n));
  for (auto& t : tasks) co_await t;
  for (Instant t : *at) EXPECT_EQ(t - deadline, 0ms);
  EXPECT_EQ(metrics().timers_fired, static_cast<std::uint64_t>(n));
}

TEST(PausedClock, EqualDeadlinesAllFireInTheSameAdvance) {
  constexpr int kTimers = 200;  // more than one scheduler batch (event_interval 61)
  auto rt = paused_runtime();
  int woken = 0;
  std::vector<Instant> at;
  rt.block_on(equal_deadlines(kTimers, &woken, &at));
  EXPECT_EQ(woken, kTimers);
  EXPECT_EQ(at.size(), static_cast<std::size_t>(kTimers));
}

// --- Far-future and past deadlines ---

Task<std::chrono::nanoseconds> lone_sleep(std::chrono::nanoseconds d) {
  const Instant start = spool::time::now();
  co_await spool::sleep(d);
  co_return spool::time::now() - start;
}

// A lone task's long sleep completes at once: the clock jumps to the deadline exactly
// (through the wheel's higher levels, whose slots it reaches without firing early), on a
// tick boundary or not.
TEST(PausedClock, FarFutureSleepAutoAdvancesExactly) {
  for (auto d : {std::chrono::nanoseconds(72h), std::chrono::nanoseconds(24h * 1000),
                 std::chrono::nanoseconds(72h + 1500us)}) {
    auto rt = paused_runtime();
    EXPECT_EQ(rt.block_on(lone_sleep(d)), d);
    EXPECT_EQ(rt.metrics().timers_fired, 1u);
  }
}

Task<void> advance_to_far(std::chrono::nanoseconds d, const bool* fired) {
  const Instant start = spool::time::now();
  co_await spool::time::advance(d - 1ms);
  EXPECT_FALSE(*fired) << "fired a millisecond early";
  co_await spool::time::advance(1ms);
  EXPECT_TRUE(*fired);
  EXPECT_EQ(spool::time::now() - start, d);
}

Task<void> far_by_hand(std::chrono::nanoseconds d, bool* fired) {
  auto sleeper = spool::spawn([](std::chrono::nanoseconds dur, bool* f) -> Task<void> {
    co_await spool::sleep(dur);
    *f = true;
  }(d, fired));
  co_await spool::yield_now();  // armed
  co_await spool::spawn(advance_to_far(d, fired));
  co_await sleeper;
}

TEST(PausedClock, FarFutureSleepFiresWhenAdvancedThere) {
  for (auto d : {std::chrono::nanoseconds(72h), std::chrono::nanoseconds(24h * 1000)}) {
    auto rt = paused_runtime();
    bool fired = false;
    rt.block_on(far_by_hand(d, &fired));
    EXPECT_TRUE(fired);
  }
}

Task<void> past_deadlines() {
  const Instant start = spool::time::now();
  const spool::Waker noop = spool::Waker::noop();
  spool::Context cx(noop);  // no reactor slot: a pending poll would start a driver thread
  auto past = spool::sleep_until(start - 1s);
  auto now = spool::sleep_until(start);
  auto zero = spool::sleep(0ms);
  auto negative = spool::sleep(-5ms);
  EXPECT_TRUE(past.poll(cx).is_ready());
  EXPECT_TRUE(now.poll(cx).is_ready());
  EXPECT_TRUE(zero.poll(cx).is_ready());
  EXPECT_TRUE(negative.poll(cx).is_ready());
  co_await spool::sleep(-1h);  // and awaited: no suspension, no jump
  EXPECT_EQ(spool::time::now() - start, 0ms);
  EXPECT_EQ(metrics().timers_armed, 0u) << "a timer already due was put in a wheel";
  EXPECT_EQ(metrics().timers_fired, 0u);
}

TEST(PausedClock, PastDeadlinesAreReadyAtTheFirstPollWithoutArming) {
  auto rt = paused_runtime();
  rt.block_on(past_deadlines());
}

// --- Sleep::reset ---

Task<void> reset_cases() {
  const Instant t0 = spool::time::now();
  {  // Before the first poll, earlier: nothing is armed until the poll.
    auto s = spool::sleep(10ms);
    s.reset(t0 + 5ms);
    EXPECT_EQ(metrics().timers_armed, 0u);
    co_await s;
    EXPECT_EQ(spool::time::now() - t0, 5ms);
    EXPECT_EQ(metrics().timers_armed, 1u);
  }
  const Instant t1 = spool::time::now();
  {  // Before the first poll, later.
    auto s = spool::sleep(10ms);
    s.reset(t1 + 20ms);
    co_await s;
    EXPECT_EQ(spool::time::now() - t1, 20ms);
    EXPECT_EQ(metrics().timers_armed, 2u);
  }
  const Instant t2 = spool::time::now();
  {  // After the first poll, earlier: a cancel and a second arm.
    auto s = spool::sleep(10ms);
    EXPECT_FALSE(co_await poll_once(s));
    EXPECT_EQ(metrics().timers_armed, 3u);
    s.reset(t2 + 3ms);
    EXPECT_EQ(metrics().timers_cancelled, 1u);
    EXPECT_EQ(metrics().timers_armed, 4u);
    co_await s;
    EXPECT_EQ(spool::time::now() - t2, 3ms);
  }
  const Instant t3 = spool::time::now();
  {  // After the first poll, later: the old deadline passes without a wake-up.
    auto s = spool::sleep(10ms);
    EXPECT_FALSE(co_await poll_once(s));
    s.reset(t3 + 30ms);
    co_await spool::time::advance(10ms);
    EXPECT_FALSE(s.is_elapsed());
    EXPECT_FALSE(co_await poll_once(s));
    co_await s;
    EXPECT_EQ(spool::time::now() - t3, 30ms);
    EXPECT_EQ(metrics().timers_cancelled, 2u);
  }
  const Instant t4 = spool::time::now();
  {  // After it fired: pending again until the new deadline; earlier than now: ready.
    auto s = spool::sleep(1ms);
    co_await s;
    EXPECT_TRUE(s.is_elapsed());
    const std::uint64_t armed = metrics().timers_armed;
    s.reset(t4 + 6ms);
    EXPECT_FALSE(s.is_elapsed());
    EXPECT_EQ(metrics().timers_armed, armed + 1) << "a polled Sleep reset later is armed at once";
    co_await s;
    EXPECT_EQ(spool::time::now() - t4, 6ms);
    s.reset(t4);  // in the past: ready at once, no arm
    EXPECT_TRUE(co_await poll_once(s));
    EXPECT_EQ(metrics().timers_armed, armed + 1);
  }
  EXPECT_EQ(metrics().timers_fired, 6u);
  EXPECT_EQ(metrics().timers_cancelled, 2u);
}

TEST(PausedClock, SleepResetEarlierAndLaterBeforeAndAfterPollAndFire) {
  auto rt = paused_runtime();
  rt.block_on(reset_cases());
}

// reset_after: from now on the Sleep's clock, before its first poll, after it fired, and
// negative (due at once).
Task<void> reset_after_cases() {
  const Instant t0 = spool::time::now();
  auto s = spool::sleep(10ms);
  s.reset_after(4ms);
  co_await s;
  EXPECT_EQ(spool::time::now() - t0, 4ms);
  s.reset_after(7ms);  // fired: pending again
  EXPECT_FALSE(co_await poll_once(s));
  co_await s;
  EXPECT_EQ(spool::time::now() - t0, 11ms);
  s.reset_after(-1ms);
  EXPECT_TRUE(co_await poll_once(s));
  EXPECT_EQ(s.deadline() - t0, 11ms);
}

TEST(PausedClock, SleepResetAfterCountsFromNow) {
  auto rt = paused_runtime();
  rt.block_on(reset_after_cases());
}

// A task waits on a Sleep that another task resets: it is woken at the new deadline.
Task<void> await_shared(spool::Sleep* s, Instant* woke) {
  co_await *s;
  *woke = spool::time::now();
}

Task<void> reset_by_other_task() {
  const Instant start = spool::time::now();
  auto s = std::make_unique<spool::Sleep>(spool::sleep(100ms));
  Instant woke{};
  auto waiter = spool::spawn(await_shared(s.get(), &woke));
  co_await spool::sleep(10ms);
  s->reset(start + 20ms);
  co_await waiter;
  EXPECT_EQ(woke - start, 20ms);
}

TEST(PausedClock, ResetByAnotherTaskWakesTheWaiterAtTheNewDeadline) {
  auto rt = paused_runtime();
  rt.block_on(reset_by_other_task());
}

// Reset to a deadline that has passed: no deadline is left to wake the waiter at, so the
// reset wakes it (before the fix it was never woken: a hang).
Task<void> reset_to_past_by_other_task() {
  const Instant start = spool::time::now();
  auto s = std::make_unique<spool::Sleep>(spool::sleep(1h));
  Instant woke{};
  auto waiter = spool::spawn(await_shared(s.get(), &woke));
  co_await spool::sleep(10ms);  // the waiter is pending on `s` by now
  s->reset(start);
  co_await waiter;
  EXPECT_EQ(woke - start, 10ms);
  EXPECT_EQ(metrics().timers_cancelled, 1u);
}

TEST(PausedClock, ResetToThePastByAnotherTaskWakesTheWaiterAtOnce) {
  auto rt = paused_runtime();
  rt.block_on(reset_to_past_by_other_task());
}

// --- Auto-advance waits for every task to be idle ---

// (a) While a blocking call runs, the clock stands still even when every task waits: the
// sleep completes only after the call returned. Nothing awaits the call (its JoinHandle is
// dropped), so only the blocking pool going idle can tell the runtime to jump.
TEST(PausedClock, NoAutoAdvanceWhileABlockingCallRuns) {
  // parks: bumped (seq_cst fetch_add + notify_all) by the runtime's on_thread_park hook on
  // the block_on thread; read by wait_at_least on the helper thread. It only says the runtime
  // went idle; no data rides on it.
  std::atomic<int> parks{0};
  auto rt = spool::Builder::current_thread()
                .start_paused(true)
                .on_thread_park([&parks] { spool_rt_test::bump(parks); })
                .build();
  spool_rt_test::Gate started, release;
  // released: stored (seq_cst) by the blocking call just before it returns; loaded by the
  // sleeper when it wakes. sleeper_done: stored (seq_cst) by the sleeper; loaded by the
  // observer tasks. Both only carry their own value.
  std::atomic<bool> released{false}, sleeper_done{false};
  const Instant start = rt.block_on([]() -> Task<Instant> { co_return spool::time::now(); }());
  auto handle = rt.handle();

  // The helper thread: spawns observer tasks that check the clock has not moved. Each
  // observer returns the park count it saw; the helper waits for one more park (the runtime
  // went idle after the observer, with the call still running) before the next observer.
  // After four observers it releases the call.
  std::thread helper([&] {
    started.wait();
    for (int round = 0; round < 4; ++round) {
      auto [now, done, parks_seen] = spool::block_on(
          handle.spawn([](const std::atomic<bool>* d,
                          const std::atomic<int>* p) -> Task<std::tuple<Instant, bool, int>> {
            co_return std::tuple{spool::time::now(), d->load(), p->load()};
          }(&sleeper_done, &parks)));
      EXPECT_EQ(now - start, 0ms) << "the clock moved while a blocking call ran";
      EXPECT_FALSE(done) << "the sleep completed while a blocking call ran";
      spool_rt_test::wait_at_least(parks, parks_seen + 1);
    }
    release.open();
  });

  const Instant woke = rt.block_on([](spool_rt_test::Gate* started_gate,
                                      spool_rt_test::Gate* release_gate, std::atomic<bool>* rel,
                                      std::atomic<bool>* done) -> Task<Instant> {
    auto sleeper = spool::spawn([](std::atomic<bool>* r, std::atomic<bool>* d) -> Task<Instant> {
      co_await spool::sleep(1h);
      EXPECT_TRUE(r->load()) << "woke before the blocking call returned";
      d->store(true);
      co_return spool::time::now();
    }(rel, done));
    spool::spawn_blocking([started_gate, release_gate, rel] {
      started_gate->open();
      release_gate->wait();
      rel->store(true);
    }).id();  // detached: nothing awaits the call
    co_return co_await sleeper;
  }(&started, &release, &released, &sleeper_done));
  helper.join();
  EXPECT_EQ(woke - start, 1h);
}

// (b) A task that stays runnable (yields 1000 times) keeps the clock still until it ends;
// only then does the sleeping task's deadline come.
Task<void> busy_yielder(Instant start, int* order, int* yielder_done_at) {
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(spool::time::now() - start, 0ms) << "the clock jumped while a task was runnable";
    co_await spool::yield_now();
  }
  *yielder_done_at = ++*order;
}

Task<void> sleeper_logs(Instant start, int* order, int* sleeper_done_at) {
  co_await spool::sleep(5ms);
  EXPECT_EQ(spool::time::now() - start, 5ms);
  *sleeper_done_at = ++*order;
}

Task<void> runnable_blocks_auto_advance() {
  const Instant start = spool::time::now();
  int order = 0, yielder_done_at = 0, sleeper_done_at = 0;
  auto a = spool::spawn(sleeper_logs(start, &order, &sleeper_done_at));
  auto b = spool::spawn(busy_yielder(start, &order, &yielder_done_at));
  co_await a;
  co_await b;
  EXPECT_EQ(yielder_done_at, 1);
  EXPECT_EQ(sleeper_done_at, 2);
}

TEST(PausedClock, RunnableTaskKeepsTheClockStill) {
  auto rt = paused_runtime();
  rt.block_on(runnable_blocks_auto_advance());
}

// spool::time::pause on a running current-thread runtime: the clock then stands still
// while tasks run, and a sleep auto-advances it; resume lets it run again from there.
Task<void> pause_and_resume() {
  spool::time::pause();
  const Instant paused_at = spool::time::now();
  for (int i = 0; i < 10; ++i) co_await spool::yield_now();
  EXPECT_EQ(spool::time::now() - paused_at, 0ms);
  co_await spool::sleep(1h);
  const Instant after = spool::time::now();
  EXPECT_GE(after, paused_at + 1h);
  EXPECT_LT(after, paused_at + 1h + 1ms);
  spool::time::resume();
  EXPECT_GE(spool::time::now(), after);
}

TEST(PausedClock, PauseOnARunningCurrentThreadRuntime) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on(pause_and_resume());
}

// A clock advanced to its end (advance saturates; a sleep of nanoseconds::max() takes it
// there by auto-advance) stays there after resume, and pauses there again.
Task<void> resume_at_the_clocks_end() {
  co_await spool::sleep(std::chrono::nanoseconds::max());
  EXPECT_EQ(spool::time::now(), Instant::max());
  spool::time::resume();
  EXPECT_EQ(spool::time::now(), Instant::max());
  spool::time::pause();
  co_await spool::time::advance(1h);
  EXPECT_EQ(spool::time::now(), Instant::max());
}

TEST(PausedClock, ResumedAtTheClocksEndItStaysThere) {
  auto rt = paused_runtime();
  rt.block_on(resume_at_the_clocks_end());
}

}  // namespace
