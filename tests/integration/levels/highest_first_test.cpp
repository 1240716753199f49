// HighestFirst (the default schedule between levels, DESIGN §3): a worker always runs the
// highest level that has work anywhere — its own queues, the inject queues, other workers'
// queues. The tests hold the workers in blocking tasks while they queue work, then record the
// order in which the queued tasks start.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <latch>
#include <string>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/levels.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_gate.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::JoinHandle;
using spool::Level;
using spool::Task;
using spool_levels_test::HeldWorkers;
using spool_levels_test::note;
using spool_levels_test::Record;
using spool_levels_test::show;
using spool_rt_test::ManualLeaf;

// One worker (or the current-thread runtime's one thread): the order of starts is exact.
class HighestFirstAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(HighestFirstAnyFlavor);

TEST_P(HighestFirstAnyFlavor, QueuedTasksStartLevelByLevelHighestFirst) {
  auto rt = builder(1).levels({Level{"high"}, Level{"mid"}, Level{"low"}}).build();
  const spool::ChannelId high = rt.channel("high"), mid = rt.channel("mid"),
                         low = rt.channel("low");
  Record record;
  std::vector<JoinHandle<void>> tasks;
  constexpr int kEach = 4;
  {
    HeldWorkers held(rt, is_multi_thread(), low, 1);
    // Queued lowest first, so that neither spawn order nor FIFO can explain the result.
    for (int i = 0; i < kEach; ++i) {
      const std::string n = std::to_string(i);
      tasks.push_back(rt.spawn_on(low, note(&record, "L" + n)));
      tasks.push_back(rt.spawn_on(mid, note(&record, "M" + n)));
      tasks.push_back(rt.spawn_on(high, note(&record, "H" + n)));
    }
    held.release();
    for (auto& t : tasks) wait(rt, t);
  }
  const std::vector<std::string> expected = {"H0", "H1", "H2", "H3", "M0", "M1",
                                             "M2", "M3", "L0", "L1", "L2", "L3"};
  EXPECT_EQ(record.events(), expected) << show(record.events());
}

// A low-level task fills the LIFO slot (spawns a sibling of its level) and then queues a
// high-level task: when it ends, the high-level task runs before the LIFO slot's task. (The
// current-thread runtime has no LIFO slot; the promise is the same.)
Task<void> spawn_low_then_high(Record* record, spool::ChannelId high,
                               std::vector<JoinHandle<void>>* spawned) {
  spawned->push_back(spool::spawn(note(record, "low child")));  // the spawner's level: LIFO
  spawned->push_back(spool::spawn_on(high, note(record, "high")));
  record->add("spawner");
  co_return;
}

TEST_P(HighestFirstAnyFlavor, ATaskALowLevelTaskSpawnsDoesNotRunAheadOfAQueuedHighLevelTask) {
  auto rt = builder(1).levels({Level{"high"}, Level{"low"}}).build();
  Record record;
  std::vector<JoinHandle<void>> spawned;  // written by the spawner, read after it is joined
  wait(rt,
       rt.spawn_on(rt.channel("low"), spawn_low_then_high(&record, rt.channel("high"), &spawned)));
  for (auto& t : spawned) wait(rt, t);
  const std::vector<std::string> expected = {"spawner", "high", "low child"};
  EXPECT_EQ(record.events(), expected) << show(record.events());
}

// The same with a wake-up: a low-level task wakes a waiting task of its level (into the LIFO
// slot on a multi-thread worker), then queues a high-level task.
Task<void> await_then_note(ManualLeaf leaf, Record* record, std::string event) {
  co_await leaf;
  record->add(std::move(event));
}

Task<void> wake_low_then_spawn_high(ManualLeaf leaf, Record* record, spool::ChannelId high,
                                    std::vector<JoinHandle<void>>* spawned) {
  leaf.fire();  // the woken task is of this task's level: the LIFO slot
  spawned->push_back(spool::spawn_on(high, note(record, "high")));
  record->add("waker");
  co_return;
}

TEST_P(HighestFirstAnyFlavor, ATaskALowLevelTaskWakesDoesNotRunAheadOfAQueuedHighLevelTask) {
  auto rt = builder(1).levels({Level{"high"}, Level{"low"}}).build();
  const spool::ChannelId high = rt.channel("high"), low = rt.channel("low");
  Record record;
  ManualLeaf leaf;
  auto woken = rt.spawn_on(low, await_then_note(leaf, &record, "woken"));
  until_pending(rt, leaf);
  std::vector<JoinHandle<void>> spawned;  // written by the waker, read after it is joined
  wait(rt, rt.spawn_on(low, wake_low_then_spawn_high(leaf, &record, high, &spawned)));
  for (auto& t : spawned) wait(rt, t);
  wait(rt, woken);
  const std::vector<std::string> expected = {"waker", "high", "woken"};
  EXPECT_EQ(record.events(), expected) << show(record.events());
}

// --- Several workers (multi-thread only) ---

// A low-level task that records whether any high-level task was still queued when it started
// (none may be: the worker that picked it must have found the high level empty).
Task<void> note_low(Record* record, std::string event) {
  const std::size_t high_queued = spool::Handle::current().metrics().levels[0].queued;
  record->add(event + (high_queued == 0
                           ? ""
                           : " with " + std::to_string(high_queued) + " high-level tasks queued"));
  co_return;
}

TEST(HighestFirst, OnTwoWorkersNoQueuedLowLevelTaskStartsWhileAHighLevelTaskIsQueued) {
  constexpr int kRounds = 20;
  constexpr int kEach = 16;
  auto rt = spool::Builder::multi_thread()
                .worker_threads(2)
                .levels({Level{"high"}, Level{"low"}})
                .build();
  const spool::ChannelId high = rt.channel("high"), low = rt.channel("low");
  for (int round = 0; round < kRounds; ++round) {
    Record record;
    std::vector<JoinHandle<void>> tasks;
    {
      HeldWorkers held(rt, true, low, 2);
      for (int i = 0; i < kEach; ++i) {
        tasks.push_back(rt.spawn_on(low, note_low(&record, "L" + std::to_string(i))));
        tasks.push_back(rt.spawn_on(high, note(&record, "H" + std::to_string(i))));
      }
      held.release();
      for (auto& t : tasks) spool::block_on(t);
    }
    const std::vector<std::string> events = record.events();
    ASSERT_EQ(events.size(), 2u * kEach);
    for (const std::string& e : events) {
      ASSERT_EQ(e.find("queued"), std::string::npos) << "round " << round << ": " << show(events);
    }
  }
}

// Worker A runs `spawner`, which queues a high-level task in A's own queue and then keeps A
// busy; worker B, freed afterwards, finds low-level work in the inject queue and the
// high-level task in A's queue: it must steal the high-level task first.
struct StealCase {
  Record record;
  std::latch started{2};          // both workers are held
  spool_rt_test::Gate go;         // opened by the test once low-level work is queued
  std::latch spawned{1};          // the spawner queued the high-level task
  spool_rt_test::Gate release_b;  // lets worker B go
  // Written by the high-level task (seq_cst store) once it ran; read by the spawner (seq_cst
  // load) in its wait, which pairs with it. Publishes nothing else.
  std::atomic<bool> high_ran{false};
  // Incremented by each low-level task (seq_cst fetch_add) when it ran; read by the spawner
  // (seq_cst load): once all ran, the spawner stops waiting for the high-level task (which
  // then runs last, on A, and the test fails on the order instead of hanging).
  std::atomic<int> lows_done{0};
};

Task<void> high_task(StealCase* c) {
  c->record.add("high");
  c->high_ran.store(true);
  co_return;
}

Task<void> low_task(StealCase* c, int i) {
  c->record.add("L" + std::to_string(i));
  c->lows_done.fetch_add(1);
  co_return;
}

Task<void> spawner(StealCase* c, spool::ChannelId high, int lows,
                   std::vector<JoinHandle<void>>* spawned) {
  c->started.count_down();
  c->go.wait();
  spawned->push_back(spool::spawn_on(high, high_task(c)));  // into this worker's own queue
  c->spawned.count_down();
  spool_rt_test::spin_until([&] { return c->high_ran.load() || c->lows_done.load() == lows; });
  co_return;
}

TEST(HighestFirst, AHighLevelTaskInABusyWorkersQueueIsStolenBeforeLowLevelWork) {
  constexpr int kLows = 8;
  auto rt = spool::Builder::multi_thread()
                .worker_threads(2)
                .levels({Level{"high"}, Level{"low"}})
                .build();
  const spool::ChannelId high = rt.channel("high"), low = rt.channel("low");
  StealCase c;
  std::vector<JoinHandle<void>> spawned;  // written by the spawner, read after it is joined
  auto a = rt.spawn_on(low, spawner(&c, high, kLows, &spawned));
  auto b = rt.spawn_on(low, spool_levels_test::hold_worker(&c.started, &c.release_b));
  c.started.wait();
  std::vector<JoinHandle<void>> lows;
  for (int i = 0; i < kLows; ++i) lows.push_back(rt.spawn_on(low, low_task(&c, i)));
  c.go.open();
  c.spawned.wait();
  c.release_b.open();
  spool::block_on(a);
  spool::block_on(b);
  for (auto& t : lows) spool::block_on(t);
  for (auto& t : spawned) spool::block_on(t);
  const std::vector<std::string> events = c.record.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "high") << show(events);
}

}  // namespace
