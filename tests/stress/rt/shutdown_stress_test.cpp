// Stress (run under TSan and ASan): runtime shutdown racing with spawns from outside
// threads, with spawns from inside tasks, and with wakes from outside threads. Every
// JoinHandle then completes — with its value or cancelled — none hangs, and every task
// frame is destroyed exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_sanitizer.hpp"

namespace {

using spool::Task;
using spool_rt_test::DropCounter;
using spool_rt_test::ManualLeaf;
using spool_rt_test::NeverReady;
using spool_rt_test::scaled;

// Frames created (each holds one DropCounter) and frames destroyed.
struct Frames {
  // created: written by make() (seq_cst fetch_add) on a spawner thread or on a worker running
  // keep_spawning. destroyed: written through DropCounter's destructor (seq_cst fetch_add)
  // wherever a frame dies. Both are read by the test (seq_cst load) only after the runtime's
  // destructor, join() and handles.clear(), which order every add before the reads.
  std::atomic<std::int64_t> created{0};
  std::atomic<std::int64_t> destroyed{0};
  DropCounter make() {
    created.fetch_add(1);
    return DropCounter(destroyed);
  }
};

// What one task does, chosen by its index: finish at once, yield a few times first, wait
// forever (only cancellation ends it), or spawn a child and await it.
Task<std::int64_t> mixed(DropCounter, Frames* frames, std::int64_t i) {
  switch (i % 4) {
    case 0:
      co_return i;
    case 1:
      for (int k = 0; k < 3; ++k) co_await spool::yield_now();
      co_return i;
    case 2:
      co_await NeverReady{};
      co_return i;
    default: {
      auto h = spool::spawn(mixed(frames->make(), frames, i - 3));  // a case-0 child
      co_return co_await h + 3;
    }
  }
}

// Polls the handle once: true if it has completed (value or JoinError), false if pending.
// Only a parent (i % 4 == 3) may fail rather than be cancelled: its child was spawned once
// shutdown had begun, so the child was cancelled and awaiting it threw.
bool resolved(spool::JoinHandle<std::int64_t>& h, std::int64_t expected, bool* cancelled) {
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
      EXPECT_EQ(expected % 4, 3) << "only a parent can fail";
      try {
        std::rethrow_if_nested(e);
        ADD_FAILURE() << "a panic without its exception";
      } catch (const spool::JoinError& child) {
        EXPECT_TRUE(child.is_cancelled());
      }
    }
    return true;
  }
}

TEST(ShutdownStress, ShutdownRacesWithSpawnsFromOutside) {
  constexpr int kRounds = scaled(30, 20);
  constexpr int kSpawners = 3;
  constexpr std::int64_t kMaxPerSpawner = scaled(4'000, 2'000);
  std::int64_t total_values = 0, total_cancelled = 0;
  for (int round = 0; round < kRounds; ++round) {
    Frames frames;
    std::vector<std::vector<spool::JoinHandle<std::int64_t>>> handles(kSpawners);
    std::latch some_spawned(kSpawners);
    std::vector<std::thread> spawners;
    {
      auto rt = spool::Builder::multi_thread().worker_threads(2).build();
      for (int s = 0; s < kSpawners; ++s) {
        spawners.emplace_back([&, s, handle = rt.handle()] {
          auto& mine = handles[static_cast<std::size_t>(s)];
          for (std::int64_t i = 0; i < kMaxPerSpawner; ++i) {
            mine.push_back(handle.spawn(mixed(frames.make(), &frames, i)));
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
        if (i % 4 == 2) {
          EXPECT_TRUE(cancelled) << "a task waiting forever must be cancelled";
        }
      }
    }
    handles.clear();
    EXPECT_EQ(frames.destroyed.load(), frames.created.load())
        << "every frame destroyed exactly once";
  }
  EXPECT_GT(total_values, 0);
  EXPECT_GT(total_cancelled, 0);
}

// Keeps spawning yielding children (detached) until the runtime shuts down.
Task<void> keep_spawning(Frames* frames, std::latch* started) {
  started->count_down();
  for (std::int64_t i = 0;; ++i) {
    (void)spool::spawn(mixed(frames->make(), frames, 4 * i + 1)).id();
    co_await spool::yield_now();
  }
}

TEST(ShutdownStress, ShutdownRacesWithSpawnsFromInsideTasks) {
  constexpr int kRounds = scaled(100, 100);
  for (int round = 0; round < kRounds; ++round) {
    Frames frames;
    {
      std::latch started(4);
      auto rt = spool::Builder::multi_thread().worker_threads(2).build();
      for (int i = 0; i < 4; ++i) (void)rt.spawn(keep_spawning(&frames, &started)).id();
      started.wait();
    }
    // The runtime is gone: every child, finished or cancelled (at spawn time or by the
    // shutdown), has had its frame destroyed exactly once.
    EXPECT_GT(frames.created.load(), 0);
    EXPECT_EQ(frames.destroyed.load(), frames.created.load());
  }
}

Task<int> await_leaf(DropCounter, ManualLeaf leaf) {
  co_await leaf;
  co_return 1;
}

// Outside threads fire the leaves that tasks wait on while the runtime is destroyed: a
// wake may land before, during or after shutdown. Every frame is destroyed exactly once
// and nothing is touched after it is freed (ASan).
TEST(ShutdownStress, ShutdownRacesWithWakesFromOutside) {
  constexpr int kRounds = scaled(100, 100);
  constexpr int kTasks = 256;
  constexpr int kFirers = 2;
  for (int round = 0; round < kRounds; ++round) {
    // Written by DropCounter's destructor (seq_cst fetch_add) wherever a task frame dies; read by
    // the test (seq_cst load) after the runtime's destructor, the firers' join() and hs.clear(),
    // which order every destruction before the read (relaxed would suffice).
    std::atomic<std::int64_t> drops{0};
    std::vector<ManualLeaf> leaves(kTasks);
    std::vector<spool::JoinHandle<int>> hs;
    std::vector<std::thread> firers;
    std::latch go(kFirers + 1);  // outlives the threads that wait on it
    {
      auto rt = spool::Builder::multi_thread().worker_threads(2).build();
      for (auto& l : leaves) hs.push_back(rt.spawn(await_leaf(DropCounter(drops), l)));
      leaves.front().wait_pending();
      for (int f = 0; f < kFirers; ++f) {
        firers.emplace_back([&leaves, &go, f] {
          go.arrive_and_wait();
          for (std::size_t i = static_cast<std::size_t>(f); i < leaves.size(); i += kFirers)
            leaves[i].fire();
        });
      }
      go.arrive_and_wait();
    }  // shutdown races with the firers
    for (auto& t : firers) t.join();
    int values = 0, cancelled = 0;
    for (auto& h : hs) {
      ASSERT_TRUE(h.is_finished());
      try {
        values += spool::block_on(h);  // each task's value is 1
      } catch (const spool::JoinError& e) {
        EXPECT_TRUE(e.is_cancelled());
        ++cancelled;
      }
    }
    EXPECT_EQ(values + cancelled, kTasks) << "each task gave its value or was cancelled";
    hs.clear();
    EXPECT_EQ(drops.load(), kTasks);
  }
}

// JoinHandles aborted and dropped from other threads while the runtime shuts down.
TEST(ShutdownStress, ShutdownRacesWithAbortsAndDrops) {
  constexpr int kRounds = scaled(100, 100);
  constexpr int kTasks = 256;
  for (int round = 0; round < kRounds; ++round) {
    // Written by DropCounter's destructor (seq_cst fetch_add) wherever a task frame dies; read by
    // the test (seq_cst load) after the runtime's destructor, both join()s and first_half.clear(),
    // which order every destruction before the read (relaxed would suffice).
    std::atomic<std::int64_t> drops{0};
    std::vector<ManualLeaf> leaves(kTasks);
    std::vector<spool::JoinHandle<int>> first_half, second_half;
    std::thread aborter, dropper;
    std::latch go(3);  // outlives the threads that wait on it
    {
      auto rt = spool::Builder::multi_thread().worker_threads(2).build();
      for (int i = 0; i < kTasks; ++i) {
        auto h = rt.spawn(await_leaf(DropCounter(drops), leaves[static_cast<std::size_t>(i)]));
        (i % 2 ? second_half : first_half).push_back(std::move(h));
      }
      aborter = std::thread([&] {
        go.arrive_and_wait();
        for (auto& h : first_half) h.abort();
      });
      dropper = std::thread([&] {
        go.arrive_and_wait();
        second_half.clear();
      });
      go.arrive_and_wait();
    }
    aborter.join();
    dropper.join();
    for (auto& h : first_half) {
      ASSERT_TRUE(h.is_finished());
      EXPECT_THROW(spool::block_on(h), spool::JoinError);
    }
    first_half.clear();
    EXPECT_EQ(drops.load(), kTasks);
  }
}

}  // namespace
