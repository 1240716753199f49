// Stress: a million spawns from several threads, spawn trees from inside tasks, remote
// spawners feeding a current-thread runtime — every completion counted exactly — and a
// JoinHandle polled with two wakers in turn while its task completes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_sanitizer.hpp"

namespace {

using spool::Task;
using spool_rt_test::scaled;

// Counts completions; its leaf fires when the last expected one arrives.
struct Completions {
  explicit Completions(std::int64_t n) : target(n) {}
  void hit() {
    if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == target) all.fire();
  }
  const std::int64_t target;
  // Written by hit() in each counted task (acq_rel fetch_add: acquire + release); the add that
  // reaches `target` has seen every earlier one and fires `all` (release). Read by the test
  // (seq_cst load) after block_on(all), whose acquire pairs with that fire: it sees the total.
  std::atomic<std::int64_t> done{0};
  spool_rt_test::ManualLeaf all;
};

Task<void> count(Completions* c) {
  c->hit();
  co_return;
}

// 10^6 spawns in every build: even under ThreadSanitizer (-O1) this takes about 3 s on
// this 2-core machine. (Should it become too slow there, scale it down for TSan only with
// spool_rt_test::scaled(1'000'000, 100'000).)
constexpr std::int64_t kSpawns = 1'000'000;

TEST(SpawnStress, AMillionSpawnsFromSeveralThreads) {
  constexpr int kThreads = 4;
  constexpr std::int64_t kPerThread = kSpawns / kThreads;
  Completions c(kThreads * kPerThread);
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::vector<std::thread> spawners;
  for (int t = 0; t < kThreads; ++t) {
    spawners.emplace_back([handle = rt.handle(), &c] {
      for (std::int64_t i = 0; i < kPerThread; ++i) (void)handle.spawn(count(&c)).id();
    });
  }
  for (auto& t : spawners) t.join();
  spool::block_on(c.all);
  EXPECT_EQ(c.done.load(), kThreads * kPerThread);
}

// Each task spawns `fanout` children until `depth` is reached, and awaits them all.
Task<std::int64_t> tree(int depth, int fanout, std::atomic<std::int64_t>* ran) {
  ran->fetch_add(1, std::memory_order_relaxed);
  if (depth == 0) co_return 1;
  std::vector<spool::JoinHandle<std::int64_t>> children;
  children.reserve(static_cast<std::size_t>(fanout));
  for (int i = 0; i < fanout; ++i) children.push_back(spool::spawn(tree(depth - 1, fanout, ran)));
  std::int64_t n = 1;
  for (auto& child : children) n += co_await child;
  co_return n;
}

TEST(SpawnStress, SpawnTreesFromInsideTasks) {
  // 1 + 8 + ... + 8^5 = 37449 tasks, twice.
  constexpr int depth = 5;
  constexpr int kFanout = 8;
  std::int64_t expected = 0;
  for (std::int64_t d = 0, level = 1; d <= depth; ++d, level *= kFanout) expected += level;
  for (bool lifo : {true, false}) {
    // Written by every tree() task (relaxed fetch_add); read by the test (seq_cst load) after
    // block_on of the root, which awaited every descendant: those joins order all the adds
    // before the read, so relaxed suffices.
    std::atomic<std::int64_t> ran{0};
    auto rt = spool::Builder::multi_thread().worker_threads(3).lifo_slot(lifo).build();
    EXPECT_EQ(spool::block_on(rt.spawn(tree(depth, kFanout, &ran))), expected);
    EXPECT_EQ(ran.load(), expected);
  }
}

constexpr int kChildren = 3;

// Spawns detached children, then counts itself.
Task<void> parent(Completions* c) {
  for (int i = 0; i < kChildren; ++i) (void)spool::spawn(count(c)).id();
  c->hit();
  co_return;
}

TEST(SpawnStress, SpawnsFromOutsideAndInsideAtOnce) {
  constexpr std::int64_t kParents = scaled(100'000, 30'000);
  Completions c(kParents * (1 + kChildren));
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::vector<std::thread> spawners;
  for (int t = 0; t < 2; ++t) {
    spawners.emplace_back([handle = rt.handle(), &c] {
      for (std::int64_t i = 0; i < kParents / 2; ++i) (void)handle.spawn(parent(&c)).id();
    });
  }
  for (auto& t : spawners) t.join();
  spool::block_on(c.all);
  EXPECT_EQ(c.done.load(), kParents * (1 + kChildren));
}

TEST(SpawnStress, RemoteSpawnersFeedACurrentThreadRuntime) {
  constexpr std::int64_t kTotal = scaled(200'000, 100'000);
  constexpr int kThreads = 2;
  Completions c(kTotal);
  auto rt = spool::Builder::current_thread().build();
  std::vector<std::thread> spawners;
  for (int t = 0; t < kThreads; ++t) {
    spawners.emplace_back([handle = rt.handle(), &c] {
      for (std::int64_t i = 0; i < kTotal / kThreads; ++i) (void)handle.spawn(count(&c)).id();
    });
  }
  rt.block_on(c.all);  // the block_on thread runs them all, woken by each remote spawn
  for (auto& t : spawners) t.join();
  EXPECT_EQ(c.done.load(), kTotal);
}

// A waker that records its wake-up, for a thread to wait on.
struct WokenFlag {
  // Written by wake() (seq_cst store, then notify); read by wait() (seq_cst): it returns
  // once the wake-up came.
  std::atomic<bool> woken{false};
  void wake() {
    woken.store(true);
    woken.notify_all();
  }
  void wait() const { woken.wait(false); }
};

Task<int> answer() { co_return 42; }

// The JoinHandle's waker slot is swapped under JOIN_WAKER while a worker completes the task:
// after the last pending poll, that poll's waker is woken (else this test hangs in wait()),
// and the next poll is ready.
TEST(SpawnStress, JoinHandlePolledWithTwoWakersInTurnWhileTheTaskCompletes) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  const long rounds = scaled(20'000, 2'000);
  for (long i = 0; i < rounds; ++i) {
    const std::shared_ptr<WokenFlag> flags[2] = {std::make_shared<WokenFlag>(),
                                                 std::make_shared<WokenFlag>()};
    const spool::Waker wakers[2] = {spool::Waker::from(flags[0]), spool::Waker::from(flags[1])};
    auto h = rt.spawn(answer());
    bool ready = false;
    int last = 0;  // the waker of the last pending poll
    for (int k = 0; k < 4 && !ready; ++k) {
      spool::Context cx(wakers[k % 2]);
      ready = h.poll(cx).is_ready();
      if (!ready) last = k % 2;
    }
    if (ready) continue;
    flags[last]->wait();
    spool::Context cx(wakers[0]);
    ASSERT_TRUE(h.poll(cx).is_ready()) << "woken, so the task is complete";
  }
}

}  // namespace
