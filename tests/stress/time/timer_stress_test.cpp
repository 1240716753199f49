// Stress (run under TSan): timers created, polled, reset, awaited and cancelled at once by
// many tasks on a runtime of either flavour and by threads outside it, with the runtime's
// timer counters checked against exactly what the program did. Bounded by counts, not time.
// On a current-thread runtime the outside threads' Handle::block_on calls take the core
// in turn with the test's own thread, so the thread that fires the timers changes.
//
// Where the counters are checked as a range, real time decides, not the program: a reset to
// a deadline 0-3 ms ahead arms a timer only if that deadline has not passed when the reset
// reads the clock (kResetShort), and an outside thread's drop of a short Sleep races with its
// firing. Every other count is exact, and so is armed = fired + cancelled.
//
// What the counters count (src/driver/time/time_driver.cpp, sleep.cpp):
//   armed      every call of TimeDriver::arm, i.e. every insertion into a wheel: the first
//              poll of a Sleep that was not due when it was made (even if its deadline has
//              passed by then: arm then counts it fired at once), and each reset of a Sleep
//              that was polled before to a deadline still ahead at the reset.
//   fired      every armed timer whose deadline passed while it was in a wheel (or at arm).
//   cancelled  every armed timer taken out of a wheel before it fired: dropped, or reset.
// A Sleep made due (sleep(0), a past sleep_until) is never armed; nor is one dropped before
// its first poll; a reset to a past deadline is not an arm either.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_sanitizer.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Task;
using spool_rt_test::scaled;
using spool_time_test::poll_once;

// What one timer operation does with its Sleep.
enum class Op {
  kAwaitShort,         // sleep(0-3 ms, > 0) awaited: armed, fired
  kAwaitZero,          // sleep(0) awaited: never armed
  kDropUnpolled,       // made, dropped before its first poll: never armed
  kDropPolled,         // sleep(1 h), polled, dropped: armed, cancelled
  kResetLongThenDrop,  // sleep(1 h), polled, reset 2 h ahead, dropped: armed ×2, cancelled ×2
  kResetPast,          // sleep(1 h), polled, reset to the past, awaited: armed, cancelled
  kResetShort,         // sleep(1 h), polled, reset 0-3 ms ahead, awaited: see Expected
  kResetAfterFire,     // sleep(0-3 ms) awaited, reset 1 h ahead, dropped: armed ×2, fired,
                       // cancelled
  kCount,
};

// The counters the operations add up to.
struct Expected {
  std::uint64_t armed = 0, fired = 0, cancelled = 0, completions = 0;
  // kResetShort: the reset arms the timer (which then fires) unless its deadline, 0-3 ms
  // ahead, passed before reset read the clock — a race with real time that the program does
  // not decide. Each such reset adds 1 to both armed and fired, or to neither.
  std::uint64_t either = 0;

  void add(Op op) {
    switch (op) {
      case Op::kAwaitShort:
        armed += 1, fired += 1, completions += 1;
        break;
      case Op::kAwaitZero:
        completions += 1;
        break;
      case Op::kDropUnpolled:
        break;
      case Op::kDropPolled:
        armed += 1, cancelled += 1;
        break;
      case Op::kResetLongThenDrop:
        armed += 2, cancelled += 2;
        break;
      case Op::kResetPast:
        armed += 1, cancelled += 1, completions += 1;
        break;
      case Op::kResetShort:
        armed += 1, cancelled += 1, completions += 1, either += 1;
        break;
      case Op::kResetAfterFire:
        armed += 2, fired += 1, cancelled += 1, completions += 1;
        break;
      case Op::kCount:
        break;
    }
  }
};

struct Planned {
  Op op;
  std::chrono::nanoseconds d;  // 1 µs .. 3 ms
};

std::vector<Planned> plan(std::size_t n, std::uint64_t seed, Expected* expected) {
  std::mt19937_64 rng(seed);
  std::vector<Planned> out;
  for (std::size_t i = 0; i < n; ++i) {
    const auto op = static_cast<Op>(rng() % static_cast<std::uint64_t>(Op::kCount));
    const auto d = std::chrono::nanoseconds(1'000 + static_cast<std::int64_t>(rng() % 3'000'000));
    out.push_back({op, d});
    expected->add(op);
  }
  return out;
}

// completions: incremented (relaxed fetch_add) by each operation that awaited its Sleep to
// the end; read by the test after every task and thread was joined (which orders them).
Task<void> run_op(Planned p, std::atomic<std::uint64_t>* completions) {
  using spool::time::now;
  switch (p.op) {
    case Op::kAwaitShort:
      co_await spool::sleep(p.d);
      completions->fetch_add(1, std::memory_order_relaxed);
      break;
    case Op::kAwaitZero:
      co_await spool::sleep(0ns);
      completions->fetch_add(1, std::memory_order_relaxed);
      break;
    case Op::kDropUnpolled: {
      auto s = spool::sleep(1h);
      break;
    }
    case Op::kDropPolled: {
      auto s = spool::sleep(1h);
      EXPECT_FALSE(co_await poll_once(s));
      break;
    }
    case Op::kResetLongThenDrop: {
      auto s = spool::sleep(1h);
      EXPECT_FALSE(co_await poll_once(s));
      s.reset(now() + 2h);
      EXPECT_FALSE(co_await poll_once(s));
      break;
    }
    case Op::kResetPast: {
      auto s = spool::sleep(1h);
      EXPECT_FALSE(co_await poll_once(s));
      s.reset(now() - 1ms);
      co_await s;
      completions->fetch_add(1, std::memory_order_relaxed);
      break;
    }
    case Op::kResetShort: {
      auto s = spool::sleep(1h);
      EXPECT_FALSE(co_await poll_once(s));
      s.reset(now() + p.d);
      co_await s;
      completions->fetch_add(1, std::memory_order_relaxed);
      break;
    }
    case Op::kResetAfterFire: {
      auto s = spool::sleep(p.d);
      co_await s;
      completions->fetch_add(1, std::memory_order_relaxed);
      s.reset(now() + 1h);
      EXPECT_FALSE(co_await poll_once(s));
      break;
    }
    case Op::kCount:
      break;
  }
}

// Runs a thread's operations one after the other, inside the runtime (Handle::block_on from
// a plain thread: its Sleeps are the runtime's, armed from this thread, fired by the workers).
Task<void> run_ops_in_sequence(const std::vector<Planned>* ops,
                               std::atomic<std::uint64_t>* completions) {
  for (const Planned& p : *ops) co_await run_op(p, completions);
}

class TimerStressAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(TimerStressAnyFlavor);

TEST_P(TimerStressAnyFlavor, ConcurrentCreateResetCancelFromTasksAndThreadsCountsExactly) {
  constexpr std::size_t kTasks = scaled(10000, 3000);
  constexpr std::size_t kThreads = 2;
  constexpr std::size_t kPerThread = scaled(600, 200);
  auto rt = build(3);
  Expected expected;
  const std::vector<Planned> task_ops = plan(kTasks, 0x5eed, &expected);
  std::vector<std::vector<Planned>> thread_ops;
  for (std::size_t t = 0; t < kThreads; ++t)
    thread_ops.push_back(plan(kPerThread, 0xabc + t, &expected));
  std::atomic<std::uint64_t> completions{0};

  std::vector<spool::JoinHandle<void>> handles;
  for (const Planned& p : task_ops) handles.push_back(rt.spawn(run_op(p, &completions)));
  std::vector<std::thread> threads;
  auto handle = rt.handle();
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&handle, &completions, ops = &thread_ops[t]] {
      handle.block_on(run_ops_in_sequence(ops, &completions));
    });
  }
  for (auto& h : handles) wait(rt, h);
  for (auto& t : threads) t.join();

  const spool::RuntimeMetrics m = rt.metrics();
  EXPECT_EQ(completions.load(), expected.completions);
  EXPECT_EQ(m.timers_cancelled, expected.cancelled);
  // Every timer armed ended fired or cancelled: nothing is left in a wheel.
  EXPECT_EQ(m.timers_armed, m.timers_fired + m.timers_cancelled);
  EXPECT_EQ(m.timers_armed - m.timers_fired, expected.armed - expected.fired);
  EXPECT_GE(m.timers_fired, expected.fired);
  EXPECT_LE(m.timers_fired, expected.fired + expected.either);
  EXPECT_GE(m.driver_parks, 1u);
}

// Sleeps polled by tasks (armed, the task's waker stored), handed over through a
// mutex-protected queue to outside threads that drop them — some after a reset an hour
// ahead — while the short ones may be firing on a worker at that very moment.
struct Handoff {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::unique_ptr<spool::Sleep>> queue;  // guarded by mutex
  std::size_t taken = 0;                            // guarded by mutex
};

Task<void> poll_and_hand_over(std::chrono::nanoseconds d, Handoff* h) {
  auto s = std::make_unique<spool::Sleep>(spool::sleep(d));
  (void)co_await poll_once(*s);  // armed; a short one may even be fired already
  {
    std::lock_guard lock(h->mutex);
    h->queue.push_back(std::move(s));
  }
  h->ready.notify_one();
}

TEST(TimerStress, OutsideThreadsCancelSleepsThatTasksPolled) {
  constexpr std::size_t kSleeps = scaled(20000, 4000);
  constexpr std::size_t kThreads = 2;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Handoff handoff;
  // resets: incremented (relaxed) by the outside threads, read after they were joined.
  std::atomic<std::uint64_t> resets{0};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&handoff, &resets, t] {
      std::mt19937 choose(static_cast<unsigned>(t) + 1);
      for (;;) {
        std::unique_ptr<spool::Sleep> s;
        {
          std::unique_lock lock(handoff.mutex);
          handoff.ready.wait(lock,
                             [&] { return !handoff.queue.empty() || handoff.taken == kSleeps; });
          if (handoff.queue.empty()) return;
          // The newest first: polled a moment ago, it is cancelled around the time it would
          // fire, while older ones fire in the queue.
          s = std::move(handoff.queue.back());
          handoff.queue.pop_back();
          if (++handoff.taken == kSleeps) handoff.ready.notify_all();
        }
        if (choose() % 2 == 0) {
          s->reset(s->deadline() + 1h);  // polled before: armed again at once
          resets.fetch_add(1, std::memory_order_relaxed);
        }
        s.reset();  // the cancel, racing with a worker firing it
      }
    });
  }
  std::mt19937_64 rng(0xcafe);
  std::size_t long_ones = 0;
  std::vector<spool::JoinHandle<void>> handles;
  for (std::size_t i = 0; i < kSleeps; ++i) {
    const bool is_long = rng() % 2 == 0;
    long_ones += is_long;
    const auto d = is_long ? std::chrono::nanoseconds(1h)
                           : std::chrono::nanoseconds(1'000 + rng() % 2'000'000);
    handles.push_back(rt.spawn(poll_and_hand_over(d, &handoff)));
  }
  for (auto& t : threads) t.join();
  for (auto& h : handles) spool::block_on(h);

  const spool::RuntimeMetrics m = rt.metrics();
  // Each first poll armed once (no Sleep was made due); each reset armed once more. Each arm
  // ended exactly once, fired or cancelled; only the short first arms could fire.
  EXPECT_EQ(m.timers_armed, kSleeps + resets.load());
  EXPECT_EQ(m.timers_fired + m.timers_cancelled, m.timers_armed);
  EXPECT_LE(m.timers_fired, kSleeps - long_ones);
  EXPECT_GE(m.timers_cancelled, long_ones + resets.load());
}

// The process-wide driver (timers made outside every runtime), shared by threads that each
// spool::block_on their own sleeps — one at a time holds it and parks in it, the others
// follow — and by a foreign executor with no reactor slot (the background thread drives
// it). A lost wake-up in the hand-over would leave a thread parked forever.
TEST(TimerStress, ManyBlockOnThreadsShareTheProcessWideDriver) {
  constexpr int kThreads = 4;
  constexpr int kSleeps = scaled(300, 100);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1u);
      for (int i = 0; i < kSleeps; ++i) {
        auto s = spool::sleep(std::chrono::microseconds(rng() % 2000));
        if (t == 0 && i % 2 == 0) {
          int pending = 0;
          spool_time_test::run_foreign(s, nullptr, &pending);  // no slot: background thread
        } else {
          spool::block_on(s);
        }
        EXPECT_GE(std::chrono::steady_clock::now(), s.deadline()) << "a timer fired early";
      }
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace
