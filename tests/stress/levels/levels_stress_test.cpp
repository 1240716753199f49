// Stress (run under TSan): priority levels and channels under load. Every level is busy at
// once on several workers that steal from each other; tasks spawn sub-work onto their own
// channel and onto others, wait for outside threads to wake them, yield, spend their budget
// and check yield requests; and shutdown races spawns on every channel. The assertions are
// the invariants: every task runs exactly once, every frame is destroyed exactly once, every
// JoinHandle completes, and every poll is counted on the task's own channel. Every run is
// bounded by counts (tasks, rounds), never by time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/levels.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_sanitizer.hpp"
#include "support/rt_tasks.hpp"

namespace {

using namespace std::chrono_literals;
using spool::JoinHandle;
using spool::Level;
using spool::Task;
using spool_rt_test::DropCounter;
using spool_rt_test::ManualLeaf;
using spool_rt_test::NeverReady;
using spool_rt_test::scaled;

// Six channels over three levels: two, one and three channels.
std::vector<Level> six_channels() {
  return {Level{"hi-a", "hi-b"}, Level{"mid"}, Level{"lo-a", "lo-b", "lo-c"}};
}

enum class Schedule { kHighestFirst, kRoundRobin };

spool::Builder levels_builder(Schedule s, std::size_t workers) {
  spool::Builder b = spool::Builder::multi_thread();
  b.worker_threads(workers).levels(six_channels());
  if (s == Schedule::kRoundRobin) b.schedule(spool::RoundRobin{{300us, 200us, 100us}});
  return b;
}

std::string schedule_name(const ::testing::TestParamInfo<Schedule>& info) {
  return info.param == Schedule::kHighestFirst ? "HighestFirst" : "RoundRobin";
}

// Shuts `rt` down (waiting for its workers) so that its counters are final.
void shut_down(spool::Runtime& rt) { rt.shutdown_timeout(std::chrono::hours(1)); }

// --- A tree of tasks across every channel ---

// What every task of a tree shares.
struct Tree {
  std::vector<spool::ChannelId> channels;
  // One leaf per task that waits for an outside thread (every fifth); fired by the firers.
  std::vector<ManualLeaf> leaves;
  // Task ids, unique per tree: fetch_add (relaxed) by each task as it starts; only uniqueness
  // matters (each id picks at most one leaf, whose AtomicWaker serves one waiting task).
  std::atomic<std::int64_t> next_id{0};
  // Tasks that ran their first poll: fetch_add (relaxed) by each task as it starts; read by the
  // test after joining every root, which orders every add before the read.
  std::atomic<std::int64_t> ran{0};
  // Frames created (make(), seq_cst fetch_add before each spawn) and destroyed (DropCounter's
  // seq_cst fetch_add wherever a frame dies); read by the test after the runtime's shutdown,
  // which orders every add before the reads.
  std::atomic<std::int64_t> created{0};
  std::atomic<std::int64_t> destroyed{0};

  DropCounter make() {
    created.fetch_add(1);
    return DropCounter(destroyed);
  }
};

constexpr int kFanout = 3;

// Tasks in a tree of `depth` levels below its root.
std::int64_t tree_size(int depth) {
  std::int64_t n = 1, level = 1;
  for (int d = 0; d < depth; ++d) n += (level *= kFanout);
  return n;
}

// Runs once, does one of five kinds of waiting, then spawns kFanout children (below depth 0):
// even ones with a plain spawn (they inherit this task's channel), odd ones onto another
// channel. Returns the number of tasks in its subtree.
Task<std::int64_t> node(DropCounter, Tree* tree, int depth) {
  const std::int64_t id = tree->next_id.fetch_add(1, std::memory_order_relaxed);
  tree->ran.fetch_add(1, std::memory_order_relaxed);
  switch (id % 5) {
    case 0:
      co_await tree->leaves[static_cast<std::size_t>(id / 5)];  // woken from outside
      break;
    case 1:
      for (int i = 0; i < 2; ++i) co_await spool::yield_now();
      break;
    case 2:
      for (int i = 0; i < 64; ++i) {
        co_await spool::yield_if_requested();
        co_await spool::consume_budget();
      }
      break;
    case 3:
      co_await spool_levels_test::Requeue{};
      break;
    default:
      break;
  }
  std::int64_t total = 1;
  if (depth > 0) {
    std::vector<JoinHandle<std::int64_t>> children;
    for (int c = 0; c < kFanout; ++c) {
      if (c % 2 == 0) {
        children.push_back(spool::spawn(node(tree->make(), tree, depth - 1)));
      } else {
        const auto& ch = tree->channels[static_cast<std::size_t>(id + c) % tree->channels.size()];
        children.push_back(spool::spawn_on(ch, node(tree->make(), tree, depth - 1)));
      }
    }
    for (auto& child : children) total += co_await child;
  }
  co_return total;
}

class LevelsStress : public ::testing::TestWithParam<Schedule> {};
INSTANTIATE_TEST_SUITE_P(, LevelsStress,
                         ::testing::Values(Schedule::kHighestFirst, Schedule::kRoundRobin),
                         schedule_name);

TEST_P(LevelsStress, EveryTaskOfTreesSpanningEveryChannelRunsOnceAndIsFreedOnce) {
  const int kRounds = static_cast<int>(scaled(20, 10));
  const int kDepth = static_cast<int>(scaled(4, 4));
  const int kRoots = static_cast<int>(scaled(64, 32));
  constexpr int kFirers = 2;
  const std::int64_t total = kRoots * tree_size(kDepth);
  for (int round = 0; round < kRounds; ++round) {
    Tree tree;
    tree.leaves.resize(static_cast<std::size_t>(total / 5 + 1));
    auto rt = levels_builder(GetParam(), 3).build();
    for (const spool::ChannelMetrics& c : rt.metrics().channels)
      tree.channels.push_back(rt.channel(c.name));
    std::vector<JoinHandle<std::int64_t>> roots;
    for (int r = 0; r < kRoots; ++r) {
      const auto& ch = tree.channels[static_cast<std::size_t>(r) % tree.channels.size()];
      roots.push_back(rt.spawn_on(ch, node(tree.make(), &tree, kDepth)));
    }
    // Outside threads fire every leaf, racing the tasks that wait on them (a leaf fired first
    // is simply ready at the task's first poll).
    std::vector<std::thread> firers;
    for (int f = 0; f < kFirers; ++f) {
      firers.emplace_back([&tree, f] {
        for (std::size_t i = static_cast<std::size_t>(f); i < tree.leaves.size(); i += kFirers)
          tree.leaves[i].fire();
      });
    }
    std::int64_t sum = 0;
    for (auto& root : roots) sum += spool::block_on(root);
    for (auto& t : firers) t.join();
    EXPECT_EQ(sum, total) << "round " << round;
    EXPECT_EQ(tree.ran.load(), total) << "round " << round;
    shut_down(rt);
    const spool::RuntimeMetrics m = rt.metrics();
    std::uint64_t polled = 0;
    for (const spool::ChannelMetrics& c : m.channels) {
      EXPECT_GT(c.polled, 0u) << c.name << " (every level and channel had work)";
      polled += c.polled;
    }
    std::uint64_t worker_polls = 0;
    for (const spool::WorkerMetrics& w : m.workers) worker_polls += w.polls;
    EXPECT_GE(polled, static_cast<std::uint64_t>(total));
    EXPECT_EQ(polled, worker_polls) << "every poll is counted on one channel";
    EXPECT_EQ(tree.created.load(), total);
    EXPECT_EQ(tree.destroyed.load(), total) << "round " << round;
  }
}

// --- Wakes from outside threads: each woken task is polled again on its own channel ---

using spool_rt_test::await_leaf;

TEST_P(LevelsStress, TasksWokenByOutsideThreadsArePolledAgainOnTheirOwnChannels) {
  const int kRounds = static_cast<int>(scaled(40, 20));
  const int kPerChannel = static_cast<int>(scaled(300, 150));
  constexpr int kFirers = 3;
  for (int round = 0; round < kRounds; ++round) {
    auto rt = levels_builder(GetParam(), 3).build();
    const std::vector<spool::ChannelMetrics> channels = rt.metrics().channels;
    std::vector<ManualLeaf> leaves(channels.size() * static_cast<std::size_t>(kPerChannel));
    std::vector<JoinHandle<void>> tasks;
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      tasks.push_back(
          rt.spawn_on(rt.channel(channels[i % channels.size()].name), await_leaf(leaves[i])));
    }
    for (const ManualLeaf& leaf : leaves) leaf.wait_pending();  // each polled once, pending
    std::vector<std::thread> firers;
    for (int f = 0; f < kFirers; ++f) {
      firers.emplace_back([&leaves, f] {
        for (std::size_t i = static_cast<std::size_t>(f); i < leaves.size(); i += kFirers)
          leaves[i].fire();
      });
    }
    for (auto& t : tasks) spool::block_on(t);
    for (auto& t : firers) t.join();
    shut_down(rt);
    const spool::RuntimeMetrics m = rt.metrics();
    for (const spool::ChannelMetrics& c : m.channels) {
      EXPECT_EQ(c.polled, 2u * static_cast<std::uint64_t>(kPerChannel))
          << "round " << round << ", channel " << c.name << ": each task polled once pending "
          << "and once after its wake-up, both on its channel";
    }
  }
}

// --- A current-thread runtime: outside threads spawn and wake its tasks while it runs ---

// Waits for `leaf`, then counts itself done. Spawned detached: the thread that runs its last
// poll frees it.
Task<void> wait_then_count(DropCounter, ManualLeaf leaf, std::atomic<std::int64_t>* done) {
  co_await leaf;
  done->fetch_add(1, std::memory_order_relaxed);
}

// The root future of block_on: lets the runtime's tasks run until `n` are done.
Task<void> drive_until_done(const std::atomic<std::int64_t>* done, std::int64_t n) {
  while (done->load(std::memory_order_relaxed) < n) co_await spool::yield_now();
}

TEST(LevelsStressCurrentThread, OutsideThreadsSpawnAndWakeDetachedTasksOnEveryChannel) {
  const int kRounds = static_cast<int>(scaled(40, 20));
  const std::int64_t kPerThread = scaled(1'000, 400);
  constexpr int kThreads = 3;
  const std::int64_t total = kThreads * kPerThread;
  for (int round = 0; round < kRounds; ++round) {
    Tree tree;  // for its frame counters
    // Tasks done: fetch_add (relaxed) by each task on the driving thread; read (relaxed) by the
    // root on the same thread, and by the test after block_on returned on this thread.
    std::atomic<std::int64_t> done{0};
    std::vector<ManualLeaf> leaves(static_cast<std::size_t>(total));
    {
      auto rt = spool::Builder::current_thread().levels(six_channels()).build();
      for (const spool::ChannelMetrics& c : rt.metrics().channels)
        tree.channels.push_back(rt.channel(c.name));
      std::latch go(kThreads + 1);
      std::vector<std::thread> outside;
      for (int t = 0; t < kThreads; ++t) {
        outside.emplace_back([&, t, h = rt.handle()] {
          go.arrive_and_wait();
          const std::size_t first = static_cast<std::size_t>(t * kPerThread);
          for (std::size_t i = first; i < first + static_cast<std::size_t>(kPerThread); ++i) {
            const auto& ch = tree.channels[i % tree.channels.size()];
            h.spawn_on(ch, wait_then_count(tree.make(), leaves[i], &done)).detach();
            // Fire an earlier leaf, whose task is queued, running or waiting by now.
            if (i >= first + 8) leaves[i - 8].fire();
          }
          for (std::size_t i = first + static_cast<std::size_t>(kPerThread) - 8;
               i < first + static_cast<std::size_t>(kPerThread); ++i)
            leaves[i].fire();
        });
      }
      go.arrive_and_wait();
      rt.block_on(drive_until_done(&done, total));
      for (auto& t : outside) t.join();
      EXPECT_EQ(done.load(), total) << "round " << round;
    }
    EXPECT_EQ(tree.created.load(), total);
    EXPECT_EQ(tree.destroyed.load(), total) << "round " << round;
  }
}

// --- Shutdown racing spawns on every channel ---

// What one task does, chosen by its index: finish at once, yield a few times, wait forever
// (only cancellation ends it), spawn a child with a plain spawn and await it, or loop on
// yield_if_requested and consume_budget.
Task<std::int64_t> mixed(DropCounter, Tree* tree, std::int64_t i) {
  switch (i % 5) {
    case 0:
      co_return i;
    case 1:
      for (int k = 0; k < 3; ++k) co_await spool::yield_now();
      co_return i;
    case 2:
      co_await NeverReady{};
      co_return i;
    case 3: {
      auto h = spool::spawn(mixed(tree->make(), tree, i - 3));  // a case-0 child
      co_return co_await h + 3;
    }
    default:
      for (int k = 0; k < 100; ++k) {
        co_await spool::yield_if_requested();
        co_await spool::consume_budget();
      }
      co_return i;
  }
}

// Polls the handle once: true if it has completed (value or JoinError), false if pending.
// Only a parent (i % 5 == 3) may fail rather than be cancelled: its child was spawned once
// shutdown had begun, so the child was cancelled and awaiting it threw.
bool resolved(JoinHandle<std::int64_t>& h, std::int64_t expected, bool* cancelled) {
  spool::Waker waker = spool::Waker::noop();
  spool::Context cx(waker);
  try {
    spool::Poll<std::int64_t> p = h.poll(cx);
    if (p.is_pending()) return false;
    EXPECT_EQ(p.value(), expected);
    *cancelled = false;
    return true;
  } catch (const spool::JoinError& e) {
    *cancelled = true;
    if (e.is_exception()) {
      EXPECT_EQ(expected % 5, 3) << "only a parent can fail";
      try {
        std::rethrow_if_nested(e);
        ADD_FAILURE() << "a failure without its exception";
      } catch (const spool::JoinError& child) {
        EXPECT_TRUE(child.is_cancelled());
      }
    }
    return true;
  }
}

// Keeps spawning children onto every channel in turn until the runtime shuts down.
Task<void> keep_spawning(Tree* tree, std::latch* started) {
  started->count_down();
  for (std::int64_t i = 0;; ++i) {
    const auto& ch = tree->channels[static_cast<std::size_t>(i) % tree->channels.size()];
    spool::spawn_on(ch, mixed(tree->make(), tree, 5 * i + 1)).detach();
    co_await spool::yield_now();
  }
}

TEST_P(LevelsStress, ShutdownRacingSpawnsOnEveryChannelFreesEveryFrameOnce) {
  const int kRounds = static_cast<int>(scaled(40, 30));
  constexpr int kSpawners = 3;
  constexpr int kInsideSpawners = 3;
  const std::int64_t kMaxPerSpawner = scaled(3'000, 1'000);
  std::int64_t total_values = 0, total_cancelled = 0;
  for (int round = 0; round < kRounds; ++round) {
    Tree tree;
    std::vector<std::vector<JoinHandle<std::int64_t>>> handles(kSpawners);
    std::latch some_spawned(kSpawners + kInsideSpawners);
    std::vector<std::thread> spawners;
    {
      auto rt = levels_builder(GetParam(), 2).build();
      for (const spool::ChannelMetrics& c : rt.metrics().channels)
        tree.channels.push_back(rt.channel(c.name));
      // All on the highest level's first channel: under HighestFirst a spawner placed on a
      // lower level would (rightly) never start while those above keep spawning onto the
      // highest level.
      for (int s = 0; s < kInsideSpawners; ++s) {
        rt.spawn_on(tree.channels[0], keep_spawning(&tree, &some_spawned)).detach();
      }
      for (int s = 0; s < kSpawners; ++s) {
        spawners.emplace_back([&, s, handle = rt.handle()] {
          auto& mine = handles[static_cast<std::size_t>(s)];
          for (std::int64_t i = 0; i < kMaxPerSpawner; ++i) {
            const auto& ch = tree.channels[static_cast<std::size_t>(i + s) % tree.channels.size()];
            mine.push_back(handle.spawn_on(ch, mixed(tree.make(), &tree, i)));
            if (i == 50) some_spawned.count_down();
          }
        });
      }
      some_spawned.wait();
    }  // the runtime shuts down while the spawners keep going
    for (auto& t : spawners) t.join();
    for (auto& mine : handles) {
      for (std::size_t i = 0; i < mine.size(); ++i) {
        bool cancelled = false;
        ASSERT_TRUE(resolved(mine[i], static_cast<std::int64_t>(i), &cancelled))
            << "round " << round << ": a JoinHandle is still pending after shutdown";
        ++(cancelled ? total_cancelled : total_values);
        if (i % 5 == 2) {
          EXPECT_TRUE(cancelled) << "a task waiting forever must be cancelled";
        }
      }
    }
    handles.clear();
    EXPECT_GT(tree.created.load(), 0);
    EXPECT_EQ(tree.destroyed.load(), tree.created.load())
        << "round " << round << ": every frame destroyed exactly once";
  }
  EXPECT_GT(total_values, 0);
  EXPECT_GT(total_cancelled, 0);
}

// --- EDF tasks put back for a higher level ---

Task<void> count_one(std::atomic<std::int64_t>* done) {
  done->fetch_add(1, std::memory_order_relaxed);
  co_return;
}

TEST(LevelsStressEdf, EdfTasksPutBackForAHigherLevelStillRunAndEveryCountReturnsToZero) {
  // Outside threads keep spawning "ui" tasks while the workers run EDF tasks of the level
  // below: a "ui" task queued between a worker's pick of an EDF task and its poll sends the
  // EDF task back to its queue (MultiThread::may_poll_now). A task sent back where no worker
  // looks would never run: its join would hang, and its level's count would stay non-zero.
  const auto kJobs = static_cast<std::int64_t>(spool_rt_test::scaled(40'000, 4'000));
  const auto kUi = static_cast<std::int64_t>(spool_rt_test::scaled(40'000, 4'000));
  constexpr int kUiSpawners = 2;
  auto rt = spool::Builder::multi_thread()
                .worker_threads(2)
                .levels({Level{"ui"}, Level{spool::Channel("jobs").earliest_deadline_first()}})
                .build();
  const spool::ChannelId ui = rt.channel("ui");
  const spool::ChannelId jobs = rt.channel("jobs");
  std::atomic<std::int64_t> jobs_done{0};
  std::atomic<std::int64_t> ui_done{0};
  std::vector<std::thread> spawners;
  for (int s = 0; s < kUiSpawners; ++s) {
    spawners.emplace_back([&] {
      for (std::int64_t i = 0; i < kUi / kUiSpawners; ++i)
        (void)rt.spawn_on(ui, count_one(&ui_done));
    });
  }
  std::vector<JoinHandle<void>> handles;
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < kJobs; ++i) {
    handles.push_back(
        rt.spawn_on(jobs, count_one(&jobs_done), start + std::chrono::microseconds(i)));
  }
  for (auto& h : handles) rt.block_on(std::move(h));
  for (auto& t : spawners) t.join();
  EXPECT_EQ(jobs_done.load(std::memory_order_relaxed), kJobs);
  const spool::RuntimeMetrics m = spool_levels_test::metrics_after(rt, kJobs + kUi);
  EXPECT_EQ(ui_done.load(std::memory_order_relaxed), kUi);
  for (const auto& c : m.channels) EXPECT_EQ(c.queued, 0u) << c.name;
  for (const auto& l : m.levels) EXPECT_EQ(l.queued, 0u);
}

}  // namespace
