// Fairness: a task that yields forever, an always-ready loop that only spends its budget,
// and two tasks that keep waking each other cannot starve a sibling, on a one-worker
// multi-thread runtime and on a current-thread runtime.
//
// Every loop below also stops after a generous number of iterations (far more than the
// runtime needs: a sibling in the inject queue is looked at every global_queue_interval
// ticks), so that a regression fails the test instead of hanging it. The assertions check
// that the loop was stopped by the sibling's flag, not by that cap.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <latch>

#include "spool/spool.hpp"

namespace {

using spool::Task;

constexpr long kYieldCap = 100'000;
constexpr long kBudgetCap = 20'000'000;

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

Task<void> set_flag(std::atomic<bool>* flag) {
  flag->store(true);
  co_return;
}

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

// A token counter that one task awaits and another fills (a reusable wake-up).
class Tokens {
 public:
  struct Take {
    Tokens* t;
    spool::Poll<void> poll(spool::Context& cx) {
      if (t->try_take()) return spool::Poll<void>::ready();
      t->waker_.register_waker(cx.waker());
      if (t->try_take()) return spool::Poll<void>::ready();
      return spool::pending;
    }
  };
  void give() {
    count_.fetch_add(1);
    waker_.wake();
  }
  Take take() { return Take{this}; }

 private:
  bool try_take() {
    std::int64_t c = count_.load();
    while (c > 0) {
      if (count_.compare_exchange_weak(c, c - 1)) return true;
    }
    return false;
  }
  // Written by give() (seq_cst fetch_add, then wake) and by try_take() (seq_cst CAS); read by
  // try_take() (seq_cst load/CAS), which pairs with give()'s add. The re-check after
  // register_waker pairs with give()'s add-then-wake, so a token is never missed.
  std::atomic<std::int64_t> count_{0};
  spool::AtomicWaker waker_;
};

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

spool::Runtime one_worker() { return spool::Builder::multi_thread().worker_threads(1).build(); }

TEST(Fairness, YieldingTaskDoesNotStarveASiblingSpawnedFromOutside) {
  auto rt = one_worker();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  std::latch started(1);
  auto busy = rt.spawn(yield_until(&stop, &started));
  started.wait();  // the only worker is now busy yielding
  auto sibling = rt.spawn(set_flag(&stop));
  spool::block_on(sibling);
  EXPECT_EQ(spool::block_on(busy), Stop::kByFlag);
}

TEST(Fairness, YieldingTaskDoesNotStarveASiblingItSpawned) {
  auto rt = one_worker();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  auto busy = rt.spawn(yield_and_spawn_sibling(&stop));
  EXPECT_EQ(spool::block_on(busy), Stop::kByFlag);
}

TEST(Fairness, BudgetPreemptsAnAlwaysReadyLoopForASiblingFromOutside) {
  auto rt = one_worker();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  std::latch started(1);
  auto busy = rt.spawn(spin_on_budget(&stop, &started));
  started.wait();
  auto sibling = rt.spawn(set_flag(&stop));
  spool::block_on(sibling);
  EXPECT_EQ(spool::block_on(busy), Stop::kByFlag);
}

TEST(Fairness, BudgetPreemptsAnAlwaysReadyLoopForASiblingItSpawned) {
  auto rt = one_worker();
  // Written by the set_flag task (seq_cst store); read by the busy task's loop (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  auto busy = rt.spawn(spin_and_spawn_sibling(&stop));
  EXPECT_EQ(spool::block_on(busy), Stop::kByFlag);
}

TEST(Fairness, TasksWakingEachOtherDoNotStarveASiblingFromOutside) {
  auto rt = one_worker();
  // Written by the set_flag task (seq_cst store); read by ping and pong (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  Tokens a, b;
  std::latch started(1);
  auto p1 = rt.spawn(ping(&a, &b, &stop, &started));
  auto p2 = rt.spawn(pong(&b, &a, &stop));
  started.wait();
  auto sibling = rt.spawn(set_flag(&stop));
  spool::block_on(sibling);
  EXPECT_EQ(spool::block_on(p1), Stop::kByFlag);
  EXPECT_EQ(spool::block_on(p2), Stop::kByFlag);
}

TEST(Fairness, TasksWakingEachOtherWithoutLifoSlotDoNotStarveASibling) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).lifo_slot(false).build();
  // Written by the set_flag task (seq_cst store); read by ping and pong (seq_cst load),
  // which pairs with it. The flag publishes no other data, so relaxed would do as well.
  std::atomic<bool> stop{false};
  Tokens a, b;
  std::latch started(1);
  auto p1 = rt.spawn(ping(&a, &b, &stop, &started));
  auto p2 = rt.spawn(pong(&b, &a, &stop));
  started.wait();
  auto sibling = rt.spawn(set_flag(&stop));
  spool::block_on(sibling);
  EXPECT_EQ(spool::block_on(p1), Stop::kByFlag);
  EXPECT_EQ(spool::block_on(p2), Stop::kByFlag);
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
