// Fairness: a task that yields forever, an always-ready loop that only spends its budget,
// and two tasks that keep waking each other cannot starve a sibling, on a one-worker
// multi-thread runtime and on a current-thread runtime: FairnessAnyFlavor.<test>/MultiThread
// and .../CurrentThread run the same test on both.
//
// Every loop below also stops after a generous number of iterations (far more than the
// runtime needs: a sibling in the inject queue is looked at every global_queue_interval
// ticks), so that a regression fails the test instead of hanging it. The assertions check
// that the loop was stopped by the sibling's flag, not by that cap.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <optional>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_tasks.hpp"
#include "support/rt_tokens.hpp"

namespace {

using spool::Task;

// Bounds on the busy loops. They only end a failing run (a sibling starved) with kByCap
// before CTest's timeout; a passing run ends at the flag, however long the outside thread
// takes to be scheduled on a loaded machine (a few milliseconds were not always enough:
// 100,000 yields failed once under load on clang's release build).
constexpr long kYieldCap = 1'000'000'000;
constexpr long kBudgetCap = 2'000'000'000;

enum class Stop { kByFlag, kByCap };

// Yields until `stop` is set; counts down `started` first.
Task<Stop> yield_until(const std::atomic<bool>* stop, std::latch* started) {
  if (started) started->count_down();
  for (long i = 0; i < kYieldCap; ++i) {
    if (stop->load()) co_return Stop::kByFlag;
    co_await spool::yield_now();
  }
  co_return Stop::kByCap;
}

// An always-ready loop: its only await is consume_budget().
Task<Stop> spin_on_budget(const std::atomic<bool>* stop, std::latch* started) {
  if (started) started->count_down();
  for (long i = 0; i < kBudgetCap; ++i) {
    co_await spool::consume_budget();
    if (stop->load()) co_return Stop::kByFlag;
  }
  co_return Stop::kByCap;
}

using spool_rt_test::set_flag;

// The sibling is spawned from inside the busy task (so it lands in the worker's own
// queue or LIFO slot rather than the inject queue).
Task<Stop> yield_and_spawn_sibling(std::atomic<bool>* stop) {
  auto sibling = spool::spawn(set_flag(stop));
  Stop s = co_await yield_until(stop, nullptr);
  co_await sibling;
  co_return s;
}

Task<Stop> spin_and_spawn_sibling(std::atomic<bool>* stop) {
  auto sibling = spool::spawn(set_flag(stop));
  Stop s = co_await spin_on_budget(stop, nullptr);
  co_await sibling;
  co_return s;
}

// Runs the busy task and the sibling on a current-thread runtime (both spawned by the root).
Task<Stop> busy_and_sibling_on_current_thread(bool budget_loop, std::atomic<bool>* stop) {
  auto busy = budget_loop ? spool::spawn(spin_on_budget(stop, nullptr))
                          : spool::spawn(yield_until(stop, nullptr));
  auto sibling = spool::spawn(set_flag(stop));
  co_await sibling;
  co_return co_await busy;
}

using spool_rt_test::Tokens;

// Two tasks that wake each other forever (each wake-up lands in the LIFO slot) until `stop`.
Task<Stop> ping(Tokens* mine, Tokens* other, const std::atomic<bool>* stop, std::latch* started) {
  if (started) started->count_down();
  for (long i = 0; i < kYieldCap; ++i) {
    other->give();
    co_await mine->take();
    if (stop->load()) {
      other->give();  // let the partner see the flag too
      co_return Stop::kByFlag;
    }
  }
  other->give();
  co_return Stop::kByCap;
}

Task<Stop> pong(Tokens* mine, Tokens* other, const std::atomic<bool>* stop) {
  for (long i = 0; i < kYieldCap; ++i) {
    co_await mine->take();
    if (stop->load()) {
      other->give();
      co_return Stop::kByFlag;
    }
    other->give();
  }
  co_return Stop::kByCap;
}

using spool_rt_test::Flavor;

// Once the busy tasks run (`started`), a sibling spawned from outside sets `stop`: every busy
// task must end because of the flag, i.e. the sibling was not starved.
void expect_outside_sibling_stops(spool::Runtime& rt, Flavor flavor, std::atomic<bool>* stop,
                                  std::latch& started, std::vector<spool::JoinHandle<Stop>> busy) {
  if (flavor == Flavor::kMultiThread) {
    started.wait();
    spool::block_on(rt.spawn(set_flag(stop)));
    for (auto& h : busy) EXPECT_EQ(spool::block_on(h), Stop::kByFlag);
    return;
  }
  // Current-thread: the busy tasks run only while this thread is in block_on, so another
  // thread spawns the sibling once they started (a remote spawn into a busy runtime).
  spool::Handle handle = rt.handle();
  std::optional<spool::JoinHandle<void>> sibling;
  std::thread spawner([&] {
    started.wait();
    sibling.emplace(handle.spawn(set_flag(stop)));
  });
  for (auto& h : busy) EXPECT_EQ(rt.block_on(h), Stop::kByFlag);
  spawner.join();
  rt.block_on(*sibling);
}

// Two tasks that wake each other forever must not starve a sibling spawned from outside.
void expect_ping_pong_does_not_starve_a_sibling(spool::Runtime& rt, Flavor flavor) {
  // Written by the set_flag task (seq_cst store); read by the busy tasks (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  Tokens a, b;
  std::latch started(1);
  std::vector<spool::JoinHandle<Stop>> busy;
  busy.push_back(rt.spawn(ping(&a, &b, &stop, &started)));
  busy.push_back(rt.spawn(pong(&b, &a, &stop)));
  expect_outside_sibling_stops(rt, flavor, &stop, started, std::move(busy));
}

class FairnessAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  // One worker on a multi-thread runtime: the busy tasks and the sibling share one thread,
  // as on a current-thread runtime.
  spool::Runtime one_worker() const { return build(1); }
};
SPOOL_RT_INSTANTIATE_FLAVORS(FairnessAnyFlavor);

TEST_P(FairnessAnyFlavor, YieldingTaskDoesNotStarveASiblingSpawnedFromOutside) {
  auto rt = one_worker();
  // Written by the set_flag task (seq_cst store); read by the busy tasks (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  std::latch started(1);
  std::vector<spool::JoinHandle<Stop>> busy;
  busy.push_back(rt.spawn(yield_until(&stop, &started)));
  expect_outside_sibling_stops(rt, flavor(), &stop, started, std::move(busy));
}

TEST_P(FairnessAnyFlavor, YieldingTaskDoesNotStarveASiblingItSpawned) {
  auto rt = one_worker();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  auto busy = rt.spawn(yield_and_spawn_sibling(&stop));
  EXPECT_EQ(wait(rt, busy), Stop::kByFlag);
}

TEST_P(FairnessAnyFlavor, BudgetPreemptsAnAlwaysReadyLoopForASiblingFromOutside) {
  auto rt = one_worker();
  // Written by the set_flag task (seq_cst store); read by the busy tasks (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  std::latch started(1);
  std::vector<spool::JoinHandle<Stop>> busy;
  busy.push_back(rt.spawn(spin_on_budget(&stop, &started)));
  expect_outside_sibling_stops(rt, flavor(), &stop, started, std::move(busy));
}

TEST_P(FairnessAnyFlavor, BudgetPreemptsAnAlwaysReadyLoopForASiblingItSpawned) {
  auto rt = one_worker();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  auto busy = rt.spawn(spin_and_spawn_sibling(&stop));
  EXPECT_EQ(wait(rt, busy), Stop::kByFlag);
}

TEST_P(FairnessAnyFlavor, TasksWakingEachOtherDoNotStarveASiblingFromOutside) {
  auto rt = one_worker();
  expect_ping_pong_does_not_starve_a_sibling(rt, flavor());
}

// The LIFO slot is a multi-thread setting.
TEST(Fairness, TasksWakingEachOtherWithoutLifoSlotDoNotStarveASibling) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).lifo_slot(false).build();
  expect_ping_pong_does_not_starve_a_sibling(rt, Flavor::kMultiThread);
}

TEST(Fairness, CurrentThreadYieldingTaskDoesNotStarveASibling) {
  auto rt = spool::Builder::current_thread().build();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  EXPECT_EQ(rt.block_on(busy_and_sibling_on_current_thread(false, &stop)), Stop::kByFlag);
}

TEST(Fairness, CurrentThreadBudgetPreemptsAnAlwaysReadyLoop) {
  auto rt = spool::Builder::current_thread().build();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  EXPECT_EQ(rt.block_on(busy_and_sibling_on_current_thread(true, &stop)), Stop::kByFlag);
}

TEST(Fairness, CurrentThreadSiblingSpawnedFromOutsideRuns) {
  auto rt = spool::Builder::current_thread().build();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  auto busy = rt.spawn(yield_until(&stop, nullptr));
  auto sibling = rt.spawn(set_flag(&stop));
  EXPECT_EQ(rt.block_on(busy), Stop::kByFlag);
  EXPECT_TRUE(sibling.is_finished());
}

// The root future of a current-thread block_on that yields must let the spawned tasks run
// (the root is not a task, but it shares the one thread with them).
TEST(Fairness, CurrentThreadRootThatYieldsLetsSpawnedTasksRun) {
  auto rt = spool::Builder::current_thread().build();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  struct Root {
    static Task<Stop> run(std::atomic<bool>* stop) {
      auto sibling = spool::spawn(set_flag(stop));
      Stop s = co_await yield_until(stop, nullptr);
      co_await sibling;
      co_return s;
    }
  };
  EXPECT_EQ(rt.block_on(Root::run(&stop)), Stop::kByFlag);
}

}  // namespace
