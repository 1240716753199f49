// Spawning tasks from outside the runtime (Runtime::spawn, a Handle on another thread) and
// from inside it (spool::spawn in a task, Handle::current), and spawning plain Futures.
// Every promise but "tasks run on worker threads" holds on both runtime flavours: those
// tests are parameterised (SpawnAnyFlavor.<test>/MultiThread, .../CurrentThread).
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::Task;
using spool_rt_test::Flavor;

Task<int> add(int a, int b) { co_return a + b; }

Task<std::thread::id> thread_of_task() { co_return std::this_thread::get_id(); }

// Spawns add(a, b) onto the current runtime and awaits it.
Task<int> spawn_inside(int a, int b) {
  auto h = spool::spawn(add(a, b));
  co_return co_await h;
}

// Spawns `n` children with spool::spawn and sums their results.
Task<long> fan_out(int n) {
  std::vector<spool::JoinHandle<int>> handles;
  for (int i = 0; i < n; ++i) handles.push_back(spool::spawn(add(i, 1)));
  long sum = 0;
  for (auto& h : handles) sum += co_await h;
  co_return sum;
}

// Spawns through Handle::current().
Task<int> spawn_via_current_handle() {
  spool::Handle handle = spool::Handle::current();
  co_return co_await handle.spawn(add(20, 22));
}

// A plain (non-Task) Future that is ready at once.
struct ReadyValue {
  int value;
  spool::Poll<int> poll(spool::Context&) { return value; }
};

class SpawnAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(SpawnAnyFlavor);

TEST_P(SpawnAnyFlavor, FromOutsideWithRuntimeSpawn) {
  auto rt = build();
  auto h = rt.spawn(add(2, 3));
  EXPECT_EQ(wait(rt, h), 5);
}

// A current-thread runtime runs its tasks on the block_on thread instead (current_thread_test).
TEST(Spawn, TasksRunOnWorkerThreadsNotTheSpawner) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto h = rt.spawn(thread_of_task());
  EXPECT_NE(spool::block_on(h), std::this_thread::get_id());
}

TEST_P(SpawnAnyFlavor, FromOutsideWithHandleOnAnotherThread) {
  auto rt = build();
  spool::Handle handle = rt.handle();
  std::promise<int> result;
  std::thread other([this, &rt, handle, &result] {
    auto h = handle.spawn(add(40, 2));
    result.set_value(wait(rt, h));
  });
  other.join();
  EXPECT_EQ(result.get_future().get(), 42);
}

TEST_P(SpawnAnyFlavor, FromManyOutsideThreadsAtOnce) {
  auto rt = build();
  spool::Handle handle = rt.handle();
  const Flavor flavor = this->flavor();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  // Written by each spawning thread (seq_cst fetch_add, the +=); read by the test (seq_cst
  // load) after join(), which orders every add before the read (relaxed would suffice).
  std::atomic<long> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&rt, flavor, handle, &total, t] {
      std::vector<spool::JoinHandle<int>> hs;
      for (int i = 0; i < kPerThread; ++i) hs.push_back(handle.spawn(add(t, i)));
      long sum = 0;
      for (auto& h : hs) sum += wait(rt, flavor, h);
      total += sum;
    });
  }
  for (auto& t : threads) t.join();
  long expected = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) expected += t + i;
  }
  EXPECT_EQ(total.load(), expected);
}

// Several threads inside rt.block_on at once, each spawning from its root: every task runs
// (on a current-thread runtime, whichever block_on thread drives runs them all).
TEST_P(SpawnAnyFlavor, FromSeveralBlockOnThreadsAtOnce) {
  auto rt = build();
  constexpr int kThreads = 3;
  constexpr int kTasksPerThread = 50;
  std::vector<std::thread> threads;
  // Written by each block_on thread (seq_cst fetch_add, the +=); read by the test (seq_cst
  // load) after join(), which orders every add before the read (relaxed would suffice).
  std::atomic<long> total{0};
  struct Root {
    static Task<long> run(int base) {
      std::vector<spool::JoinHandle<int>> hs;
      for (int i = 0; i < kTasksPerThread; ++i) hs.push_back(spool::spawn(add(base, i)));
      long sum = 0;
      for (auto& h : hs) sum += co_await h;
      co_return sum;
    }
  };
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&rt, &total, t] { total += rt.block_on(Root::run(t * 1000)); });
  }
  for (auto& th : threads) th.join();
  long expected = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kTasksPerThread; ++i) expected += t * 1000 + i;
  }
  EXPECT_EQ(total.load(), expected);
}

TEST_P(SpawnAnyFlavor, FromInsideATaskWithSpoolSpawn) {
  auto rt = build();
  auto h = rt.spawn(spawn_inside(7, 8));
  EXPECT_EQ(wait(rt, h), 15);
}

TEST_P(SpawnAnyFlavor, FromInsideRuntimeBlockOn) {
  auto rt = build();
  EXPECT_EQ(rt.block_on(spawn_inside(1, 2)), 3);
}

TEST_P(SpawnAnyFlavor, ManyChildrenFromInsideATask) {
  auto rt = build();
  constexpr int kChildren = 1000;  // more than a local queue holds: overflow to inject
  auto h = rt.spawn(fan_out(kChildren));
  long expected = 0;
  for (int i = 0; i < kChildren; ++i) expected += i + 1;
  EXPECT_EQ(wait(rt, h), expected);
}

TEST_P(SpawnAnyFlavor, HandleCurrentInsideATaskSpawnsOntoTheSameRuntime) {
  auto rt = build();
  auto h = rt.spawn(spawn_via_current_handle());
  EXPECT_EQ(wait(rt, h), 42);
}

// Handle::current in the block_on root, and in a task that the root spawned through it.
TEST_P(SpawnAnyFlavor, HandleCurrentWorksInsideTheRootAndInsideTasks) {
  auto rt = build();
  struct Root {
    static Task<int> inner() {
      spool::Handle h = spool::Handle::current();
      co_return co_await h.spawn(add(20, 0));
    }
    static Task<int> run() {
      spool::Handle h = spool::Handle::current();
      int a = co_await h.spawn(inner());
      co_return a + 1;
    }
  };
  EXPECT_EQ(rt.block_on(Root::run()), 21);
}

TEST_P(SpawnAnyFlavor, HandleTryCurrentIsEmptyOutsideAndSetInside) {
  EXPECT_FALSE(spool::Handle::try_current().has_value());
  auto rt = build(1);
  struct Probe {
    spool::Poll<bool> poll(spool::Context&) { return spool::Handle::try_current().has_value(); }
  };
  EXPECT_TRUE(wait(rt, rt.spawn(Probe{})));
  EXPECT_FALSE(spool::Handle::try_current().has_value());  // restored after the wait
  EXPECT_TRUE(rt.block_on(Probe{}));
  EXPECT_FALSE(spool::Handle::try_current().has_value());  // restored after block_on
}

TEST_P(SpawnAnyFlavor, APlainFutureCanBeSpawned) {
  auto rt = build(1);
  auto h = rt.spawn(ReadyValue{17});
  EXPECT_EQ(wait(rt, h), 17);
}

// A plain Future that forwards to a ManualLeaf owned by the test. (It holds only a pointer:
// clang 14 with -fsanitize=function, part of the clang asan preset, fails to assemble the
// coroutine template that wraps a spawned plain Future with a non-trivially destructible
// member -- "Cannot represent a difference across sections".)
struct LeafRef {
  spool_rt_test::ManualLeaf* leaf;
  spool::Poll<void> poll(spool::Context& cx) { return leaf->poll(cx); }
};

TEST_P(SpawnAnyFlavor, APendingPlainFutureRunsWhenWokenFromAnotherThread) {
  auto rt = build();
  spool_rt_test::ManualLeaf leaf;
  auto h = rt.spawn(LeafRef{&leaf});
  until_pending(rt, leaf);
  EXPECT_FALSE(h.is_finished());
  std::thread firer([leaf]() mutable { leaf.fire(); });
  wait(rt, h);
  firer.join();
  EXPECT_TRUE(h.is_finished());
}

TEST_P(SpawnAnyFlavor, TaskIdsAreUniqueAndNonZero) {
  auto rt = build(1);
  auto a = rt.spawn(add(1, 1));
  auto b = rt.spawn(add(1, 1));
  EXPECT_NE(a.id(), 0u);
  EXPECT_NE(b.id(), 0u);
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(wait(rt, a) + wait(rt, b), 4);
}

}  // namespace
