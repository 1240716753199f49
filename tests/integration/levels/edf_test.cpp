// Earliest-deadline-first channels and delayed spawns (docs/levels.md): an EDF channel runs
// its tasks in deadline order, counts starts after the deadline as misses, passes a task's
// deadline on to what it spawns; spawn_after / spawn_at start a task when the time comes.
#include <gtest/gtest.h>

#include <chrono>
#include <latch>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"

namespace edf_test {
namespace {

using namespace std::chrono_literals;
using spool::Channel;
using spool::Level;
using Clock = std::chrono::steady_clock;

// The order in which tasks started, by their labels.
struct Record {
  std::mutex mutex;
  std::vector<int> order;  // guarded by mutex
  void add(int label) {
    std::lock_guard lock(mutex);
    order.push_back(label);
  }
};

spool::Task<void> note(Record* record, int label) {
  record->add(label);
  co_return;
}

spool::Builder with_edf(spool::Builder b) {
  b.levels({Level{Channel("jobs").earliest_deadline_first(), "fifo"}});
  return b;
}

class EdfAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(EdfAnyFlavor);

TEST_P(EdfAnyFlavor, TasksStartInDeadlineOrderAndTasksWithoutADeadlineLast) {
  auto rt = with_edf(builder(1)).build();
  const auto jobs = rt.channel("jobs");
  Record record;
  std::optional<std::latch> hold;
  std::latch running(1);
  if (is_multi_thread()) {
    // The one worker is busy while the tasks are queued, so that all of them wait together.
    hold.emplace(1);
    (void)rt.spawn_on(rt.channel("fifo"), spool::poll_fn([&](spool::Context&) {
                        running.count_down();
                        hold->wait();
                        return spool::Poll<void>::ready();
                      }));
    running.wait();
  }
  const auto base = Clock::now() + 1h;  // far ahead: no task misses its deadline
  const int deadlines[] = {5, 1, 4, 2, 3};
  std::vector<spool::JoinHandle<void>> handles;
  handles.push_back(rt.spawn_on(jobs, note(&record, 99)));  // no deadline
  for (int d : deadlines) handles.push_back(rt.spawn_on(jobs, note(&record, d), base + d * 1s));
  if (hold) hold->count_down();
  for (auto& h : handles) wait(rt, std::move(h));
  EXPECT_EQ(record.order, (std::vector<int>{1, 2, 3, 4, 5, 99}));
  EXPECT_EQ(rt.metrics().channels[0].deadline_misses, 0u);
}

TEST_P(EdfAnyFlavor, TasksStartingAfterTheirDeadlineAreCountedAsMisses) {
  auto rt = with_edf(builder()).build();
  const auto jobs = rt.channel("jobs");
  Record record;
  std::vector<spool::JoinHandle<void>> handles;
  for (int i = 0; i < 3; ++i)
    handles.push_back(rt.spawn_on(jobs, note(&record, i), Clock::now() - 1s));
  for (int i = 3; i < 5; ++i)
    handles.push_back(rt.spawn_on(jobs, note(&record, i), Clock::now() + 1h));
  for (auto& h : handles) wait(rt, std::move(h));
  const spool::RuntimeMetrics m = rt.metrics();
  EXPECT_EQ(m.channels[0].deadline_misses, 3u);
  EXPECT_EQ(m.channels[1].deadline_misses, 0u);
  EXPECT_EQ(m.levels[0].deadline_misses, 3u);
}

spool::Task<void> parent(Record* record, std::optional<spool::JoinHandle<void>>* child) {
  record->add(1);
  child->emplace(spool::spawn(note(record, 2)));  // inherits "jobs" and this deadline
  co_return;
}

TEST(Edf, ASpawnedTaskInheritsItsSpawnersDeadline) {
  // One thread: the order is the EDF order alone. The child, spawned with its parent's
  // deadline (before the second task's), starts before the second task.
  auto rt = with_edf(spool::Builder::current_thread()).build();
  const auto jobs = rt.channel("jobs");
  Record record;
  std::optional<spool::JoinHandle<void>> child;
  const auto base = Clock::now() + 1h;
  auto first = rt.spawn_on(jobs, parent(&record, &child), base + 1s);
  auto second = rt.spawn_on(jobs, note(&record, 3), base + 2s);
  rt.block_on(std::move(second));
  rt.block_on(std::move(first));
  ASSERT_TRUE(child.has_value());
  rt.block_on(std::move(*child));
  EXPECT_EQ(record.order, (std::vector<int>{1, 2, 3}));
}

TEST(Edf, ADeadlineOnAFifoChannelIsRefused) {
  auto rt = with_edf(spool::Builder::multi_thread().worker_threads(1)).build();
  try {
    (void)rt.spawn_on(rt.channel("fifo"), spool::yield_now(), Clock::now());
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"fifo\", which is FIFO"), std::string::npos) << e.what();
  }
}

spool::Task<spool::Instant> started_at() { co_return spool::time::now(); }

TEST(SpawnAfter, TheTaskStartsWhenTheDelayHasPassedOnThePausedClock) {
  auto rt = spool::Builder::current_thread()
                .levels({Level{"high"}, Level{"low"}})
                .start_paused(true)
                .build();
  const auto start = rt.block_on(started_at());
  auto late = rt.spawn_after(rt.channel("high"), 10s, started_at());
  auto at = rt.spawn_at(rt.channel("low"), start + 20s, started_at());
  EXPECT_GE(rt.block_on(std::move(late)), start + 10s);
  EXPECT_GE(rt.block_on(std::move(at)), start + 20s);
}

spool::Task<void> sleep_a_day() { co_await spool::sleep(24h); }

// nanoseconds::max() means "never": the start saturates (it overflowed, UB, and wrapped to
// an instant long past, so the task started at once).
TEST(SpawnAfter, AnUnboundedDelayNeverStartsTheTask) {
  auto rt = spool::Builder::current_thread().start_paused(true).build();
  auto never = rt.spawn_after(rt.channel("default"), std::chrono::nanoseconds::max(), started_at());
  rt.block_on(sleep_a_day());  // the paused clock jumps a day ahead
  EXPECT_FALSE(never.is_finished());
  never.abort();
  try {
    (void)rt.block_on(std::move(never));
    ADD_FAILURE() << "the task started";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled()) << e.what();
  }
}

TEST(SpawnAfter, TheDelayedTaskIsOnItsChannel) {
  auto rt = spool::Builder::current_thread()
                .levels({Level{"high"}, Level{"low"}})
                .start_paused(true)
                .build();
  auto h = rt.spawn_after(rt.channel("high"), 1s, spool::yield_now());
  rt.block_on(std::move(h));
  const spool::RuntimeMetrics m = rt.metrics();
  EXPECT_GT(m.channels[0].polled, 0u);
  EXPECT_EQ(m.channels[1].polled, 0u);
}

}  // namespace

namespace {

TEST(Edf, TasksWithEqualDeadlinesOrNoneRunInArrivalOrder) {
  auto rt = with_edf(spool::Builder::current_thread()).build();
  const auto jobs = rt.channel("jobs");
  Record record;
  const auto same = Clock::now() + 1h;
  std::vector<spool::JoinHandle<void>> handles;
  for (int i = 0; i < 8; ++i) handles.push_back(rt.spawn_on(jobs, note(&record, i), same));
  for (int i = 8; i < 16; ++i) handles.push_back(rt.spawn_on(jobs, note(&record, i)));
  for (auto& h : handles) rt.block_on(std::move(h));
  std::vector<int> expected;
  for (int i = 0; i < 16; ++i) expected.push_back(i);
  EXPECT_EQ(record.order, expected);
}

}  // namespace
}  // namespace edf_test
