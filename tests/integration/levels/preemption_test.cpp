// Cooperative pre-emption (DESIGN §3): under HighestFirst, when a higher level has work that
// no idle worker can take, the worker running the lowest-level task is asked to yield; the
// budget check inside every spool leaf honours the request, and spool::yield_if_requested()
// lets CPU-bound code check it. Without levels, or under RoundRobin, nobody is ever asked.
//
// The loops below stop at a flag that the high-level task sets. Once that task is queued they
// also count their iterations, and stop at a cap far beyond what a passing run needs (a
// passing run needs a handful: the asked loop yields at its next check), so that a regression
// (the high-level task never runs) fails the test instead of hanging it; the assertions check
// that each loop was stopped by the flag, not by the cap.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/levels.hpp"
#include "support/rt_flavor.hpp"

namespace {

using namespace std::chrono_literals;
using spool::JoinHandle;
using spool::Level;
using spool::Task;
using spool_levels_test::note;
using spool_levels_test::Record;
using spool_levels_test::show;

// Iterations a loop may run once the high-level task is queued (a failing run ends after
// about 15 s in a debug build, well under a second in a release build).
constexpr long kCapAfterSpawn = 200'000'000;

enum class Stop { kByFlag, kByCap };

// spool::yield_if_requested(), counting the times it yielded in `*yields` (written by the
// one task that awaits it; read by the test after joining that task).
class CountedYield {
 public:
  explicit CountedYield(std::int64_t* yields) : yields_(yields) {}
  spool::Poll<void> poll(spool::Context& cx) {
    spool::Poll<void> p = inner_.poll(cx);
    if (p.is_pending()) ++*yields_;
    return p;
  }

 private:
  spool::YieldIfRequested inner_;
  std::int64_t* yields_;
};

// spool::consume_budget(), noting in `*yielded` whether it yielded.
class NotedBudget {
 public:
  explicit NotedBudget(bool* yielded) : yielded_(yielded) {}
  spool::Poll<void> poll(spool::Context& cx) {
    spool::Poll<void> p = inner_.poll(cx);
    if (p.is_pending()) *yielded_ = true;
    return p;
  }

 private:
  spool::ConsumeBudget inner_;
  bool* yielded_;
};

// What the loops and the high-level task share.
struct Flags {
  // Set (seq_cst store) by whoever spawned the high-level task, right after spawning it; read
  // by the loops (seq_cst load), which then count toward the cap. Publishes nothing else.
  std::atomic<bool> spawned{false};
  // Set by the high-level task (seq_cst store) when it runs; read by the loops (seq_cst load),
  // which stop. Publishes nothing else.
  std::atomic<bool> stop{false};
};

Task<void> set_stop(Flags* f) {
  f->stop.store(true);
  co_return;
}

// A CPU-bound loop: its only await is yield_if_requested().
Task<Stop> loop_until_stop(Flags* f, std::latch* looping, std::int64_t* yields) {
  looping->count_down();
  for (long after_spawn = 0; after_spawn < kCapAfterSpawn;) {
    if (f->stop.load()) co_return Stop::kByFlag;
    if (f->spawned.load()) ++after_spawn;
    co_await CountedYield(yields);
  }
  co_return Stop::kByCap;
}

// The same loop, which also spawns the high-level task once every loop runs.
Task<Stop> loop_and_spawn_high(spool::ChannelId high, Flags* f, std::latch* looping,
                               std::int64_t* yields) {
  looping->count_down();
  std::optional<JoinHandle<void>> setter;
  for (long after_spawn = 0; after_spawn < kCapAfterSpawn;) {
    if (f->stop.load()) {
      co_await *setter;  // only the setter sets the flag
      co_return Stop::kByFlag;
    }
    if (!setter && looping->try_wait()) {
      setter.emplace(spool::spawn_on(high, set_stop(f)));
      f->spawned.store(true);
    }
    if (f->spawned.load()) ++after_spawn;
    co_await CountedYield(yields);
  }
  co_return Stop::kByCap;
}

class PreemptionAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  // Multi-thread: two workers, both to be occupied by loops. Current-thread: its one thread.
  int loops() const { return is_multi_thread() ? 2 : 1; }
  spool::Runtime two_levels() const {
    return builder(2).levels({Level{"high"}, Level{"low"}}).build();
  }
};
SPOOL_RT_INSTANTIATE_FLAVORS(PreemptionAnyFlavor);

TEST_P(PreemptionAnyFlavor, AHighLevelTaskSpawnedFromOutsideMakesALoopingLowLevelTaskYield) {
  auto rt = two_levels();
  Flags flags;
  std::latch looping(loops());
  std::vector<std::int64_t> yields(static_cast<std::size_t>(loops()), 0);
  std::vector<JoinHandle<Stop>> busy;
  for (std::size_t i = 0; i < yields.size(); ++i)
    busy.push_back(rt.spawn_on(rt.channel("low"), loop_until_stop(&flags, &looping, &yields[i])));
  std::optional<JoinHandle<void>> setter;  // written by the spawning thread, read after its join
  // Once every worker loops, a thread outside the runtime spawns the high-level task. (On a
  // current-thread runtime the loop runs only while this thread is inside block_on.)
  std::thread spawner([&, h = rt.handle()] {
    looping.wait();
    setter.emplace(h.spawn_on(h.channel("high"), set_stop(&flags)));
    flags.spawned.store(true);
  });
  for (auto& b : busy) EXPECT_EQ(wait(rt, b), Stop::kByFlag);
  spawner.join();
  wait(rt, *setter);
  std::int64_t total = 0;
  for (std::int64_t y : yields) total += y;
  EXPECT_GE(total, 1) << "a loop yielded for the high-level task";
}

TEST_P(PreemptionAnyFlavor, AHighLevelTaskSpawnedByALoopingLowLevelTaskMakesALoopYield) {
  auto rt = two_levels();
  Flags flags;
  std::latch looping(loops());
  std::vector<std::int64_t> yields(static_cast<std::size_t>(loops()), 0);
  std::vector<JoinHandle<Stop>> busy;
  const spool::ChannelId high = rt.channel("high"), low = rt.channel("low");
  busy.push_back(rt.spawn_on(low, loop_and_spawn_high(high, &flags, &looping, &yields[0])));
  for (std::size_t i = 1; i < yields.size(); ++i)
    busy.push_back(rt.spawn_on(low, loop_until_stop(&flags, &looping, &yields[i])));
  for (auto& b : busy) EXPECT_EQ(wait(rt, b), Stop::kByFlag);
  std::int64_t total = 0;
  for (std::int64_t y : yields) total += y;
  EXPECT_GE(total, 1) << "a loop yielded for the high-level task";
}

// On one thread the request is immediate: the task that queued a high-level task is asked at
// once, so its very next check yields, and the high-level task runs before it resumes.

// Checks yield_if_requested `n` times; returns how many of them yielded.
Task<std::int64_t> check_n_times(int n) {
  std::int64_t yields = 0;
  for (int i = 0; i < n; ++i) co_await CountedYield(&yields);
  co_return yields;
}

Task<void> check_spawn_high_check(spool::ChannelId high, Record* record,
                                  std::vector<JoinHandle<void>>* spawned) {
  const std::int64_t before = co_await check_n_times(1'000);
  record->add("yields before: " + std::to_string(before));
  spawned->push_back(spool::spawn_on(high, note(record, "high")));
  std::int64_t yields = 0;
  co_await CountedYield(&yields);
  record->add("first check yielded: " + std::to_string(yields));
  const std::int64_t after = co_await check_n_times(1'000);
  record->add("yields after: " + std::to_string(after));
}

TEST_P(PreemptionAnyFlavor, YieldIfRequestedYieldsAtOnceWhenItsTaskQueuedAHigherLevelTask) {
  auto rt = builder(1).levels({Level{"high"}, Level{"low"}}).build();
  Record record;
  std::vector<JoinHandle<void>> spawned;  // written by the task, read after it is joined
  wait(rt, rt.spawn_on(rt.channel("low"),
                       check_spawn_high_check(rt.channel("high"), &record, &spawned)));
  for (auto& t : spawned) wait(rt, t);
  const std::vector<std::string> expected = {"yields before: 0", "high", "first check yielded: 1",
                                             "yields after: 0"};
  EXPECT_EQ(record.events(), expected) << show(record.events());
}

// Spends budget until consume_budget yields; returns how many calls that took.
Task<int> calls_until_budget_yields() {
  for (int calls = 1;; ++calls) {
    bool yielded = false;
    co_await NotedBudget(&yielded);
    if (yielded) co_return calls;
  }
}

Task<void> spend_spawn_high_spend(spool::ChannelId high, Record* record,
                                  std::vector<JoinHandle<void>>* spawned) {
  // A fresh budget lasts many calls (the control)...
  record->add("calls to yield: " + std::to_string(co_await calls_until_budget_yields()));
  // ...but once a higher-level task waits, the next budget check yields.
  spawned->push_back(spool::spawn_on(high, note(record, "high")));
  record->add("calls to yield: " + std::to_string(co_await calls_until_budget_yields()));
}

TEST_P(PreemptionAnyFlavor, TheBudgetCheckYieldsAtOnceWhenItsTaskQueuedAHigherLevelTask) {
  auto rt = builder(1).levels({Level{"high"}, Level{"low"}}).build();
  Record record;
  std::vector<JoinHandle<void>> spawned;  // written by the task, read after it is joined
  wait(rt, rt.spawn_on(rt.channel("low"),
                       spend_spawn_high_spend(rt.channel("high"), &record, &spawned)));
  for (auto& t : spawned) wait(rt, t);
  const std::vector<std::string> events = record.events();
  ASSERT_EQ(events.size(), 3u) << show(events);
  EXPECT_NE(events[0], "calls to yield: 1") << "the control: " << show(events);
  EXPECT_EQ(events[1], "high") << show(events);
  EXPECT_EQ(events[2], "calls to yield: 1") << show(events);
}

// --- Nobody is asked to yield without levels or under RoundRobin ---

// Spawns `n` tasks onto `channel` (or, without one, with a plain spawn), then checks
// yield_if_requested 1,000 times; returns how many checks yielded.
Task<std::int64_t> spawn_then_check(std::optional<spool::ChannelId> channel, int n,
                                    std::vector<JoinHandle<void>>* spawned) {
  for (int i = 0; i < n; ++i) {
    spawned->push_back(channel ? spool::spawn_on(*channel, spool_levels_test::Requeue{})
                               : spool::spawn(spool_levels_test::Requeue{}));
  }
  co_return co_await check_n_times(1'000);
}

TEST_P(PreemptionAnyFlavor, YieldIfRequestedNeverYieldsWithoutLevels) {
  auto rt = build(1);
  std::vector<JoinHandle<void>> spawned;  // written by the task, read after it is joined
  EXPECT_EQ(wait(rt, rt.spawn(spawn_then_check(std::nullopt, 10, &spawned))), 0);
  for (auto& t : spawned) wait(rt, t);
}

TEST_P(PreemptionAnyFlavor, YieldIfRequestedNeverYieldsUnderRoundRobin) {
  auto rt = builder(1)
                .levels({Level{"high"}, Level{"low"}})
                .schedule(spool::RoundRobin{{1ms, 1ms}})
                .build();
  std::vector<JoinHandle<void>> spawned;  // written by the task, read after it is joined
  EXPECT_EQ(
      wait(rt, rt.spawn_on(rt.channel("low"), spawn_then_check(rt.channel("high"), 10, &spawned))),
      0);
  for (auto& t : spawned) wait(rt, t);
}

// The same workload under HighestFirst does yield: the control for the two tests above.
TEST_P(PreemptionAnyFlavor, YieldIfRequestedYieldsForTheSameWorkloadUnderHighestFirst) {
  auto rt = builder(1).levels({Level{"high"}, Level{"low"}}).build();
  std::vector<JoinHandle<void>> spawned;  // written by the task, read after it is joined
  EXPECT_GE(
      wait(rt, rt.spawn_on(rt.channel("low"), spawn_then_check(rt.channel("high"), 10, &spawned))),
      1);
  for (auto& t : spawned) wait(rt, t);
}

}  // namespace
