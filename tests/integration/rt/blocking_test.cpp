// block_in_place (hands the worker's core to another thread; refused on a current-thread
// runtime) and spawn_blocking (bounded pool, queueing, keep-alive, thread reuse). Both
// flavours have a blocking pool: the spawn_blocking tests, and block_in_place on a pool
// thread, run on each (SpawnBlockingAnyFlavor.<test>/MultiThread and .../CurrentThread).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_gate.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Task;
using spool_rt_test::Gate;

// Blocks inside block_in_place until `release` opens, then goes on as a normal task.
Task<int> blocks_in_place(std::latch* blocking, const Gate* release) {
  int v = spool::block_in_place([&] {
    blocking->count_down();
    release->wait();
    return 7;
  });
  co_await spool::yield_now();  // the task carries on normally afterwards
  co_return v + 1;
}

// Blocks its worker thread without block_in_place (occupies one core).
Task<void> blocks_worker(std::latch* started, const Gate* release) {
  started->count_down();
  release->wait();
  co_return;
}

Task<int> six() { co_return 6; }

Task<void> open_gate(Gate* gate) {
  gate->open();
  co_return;
}

// On a 2-worker runtime: A blocks in block_in_place; C then blocks the second core plainly;
// B, spawned last, is the only one that can release them — so B runs only if A's core was
// handed to another thread.
TEST(BlockInPlace, OtherTasksKeepRunningWhileOneBlocks) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Gate release;
  std::latch a_blocking(1), c_blocking(1);
  auto a = rt.spawn(blocks_in_place(&a_blocking, &release));
  a_blocking.wait();
  auto c = rt.spawn(blocks_worker(&c_blocking, &release));
  c_blocking.wait();
  auto b = rt.spawn(open_gate(&release));
  spool::block_on(b);
  spool::block_on(c);
  EXPECT_EQ(spool::block_on(a), 8);
}

// With one worker, the only core is handed away: a task spawned from inside the blocking
// section must run on it while the section still blocks (waiting for that very task).
TEST(BlockInPlace, ATaskSpawnedInsideTheBlockingSectionRunsMeanwhile) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  struct Body {
    static Task<bool> run() {
      Gate opened;
      bool was_open = spool::block_in_place([&opened] {
        auto child = spool::spawn(open_gate(&opened));
        opened.wait();
        return opened.is_open();
      });
      co_return was_open;
    }
  };
  EXPECT_TRUE(spool::block_on(rt.spawn(Body::run())));
}

// A spawned task awaited after a yield and a timer: it needs the runtime's workers and its
// driver, and its yield's wake must not wait in the blocked worker's deferred list.
Task<int> spawn_and_await_six() {
  co_await spool::yield_now();
  co_await spool::sleep(1ms);
  auto [a, b] = co_await spool::join(six(), six());  // the second child spawned apart
  co_return co_await spool::spawn(six()) + a - b;
}

// Once the worker's core went to another thread, this one runs no loop while it blocks:
// block_on inside, of the runtime's own Handle or the plain one, runs its future (it threw
// NestedEventLoop, although docs/adopting.md allows it, as inside spawn_blocking). The only
// core is handed away, so the futures run on the thread that took it.
TEST(BlockInPlace, ABlockOnInsideRunsItsFutureWhileTheCoreRunsOnAnotherThread) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  struct Body {
    static Task<int> run() {
      spool::Handle handle = spool::Handle::current();
      const int a = spool::block_in_place([&] { return handle.block_on(spawn_and_await_six()); });
      const int b = spool::block_in_place([] { return spool::block_on(six()); });
      co_await spool::yield_now();  // the task carries on normally afterwards
      co_return a + b;
    }
  };
  EXPECT_EQ(spool::block_on(rt.spawn(Body::run())), 12);
  EXPECT_EQ(spool::block_on(rt.spawn(spawn_and_await_six())), 6);
}

// With the one blocking-pool thread busy, block_in_place keeps the core and blocks with it;
// a block_on inside is refused with a message that says why (the pool had no thread free).
TEST(BlockInPlace, ABlockOnInsideWhenThePoolIsFullSaysTheWorkerKeptItsCore) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).max_blocking_threads(1).build();
  std::latch started(1);
  std::latch release(1);
  auto busy = rt.spawn_blocking([&] {
    started.count_down();
    release.wait();
  });
  started.wait();
  struct Body {
    static Task<std::string> run() {
      try {
        spool::block_in_place([] { (void)spool::block_on(six()); });
      } catch (const spool::NestedEventLoop& e) {
        co_return std::string(e.what());
      }
      co_return std::string("no error");
    }
  };
  const std::string what = spool::block_on(rt.spawn(Body::run()));
  release.count_down();
  spool::block_on(std::move(busy));
  EXPECT_NE(what.find("kept its core"), std::string::npos) << what;
  EXPECT_NE(what.find("max_blocking_threads"), std::string::npos) << what;
}

TEST(BlockInPlace, ThrowsLogicErrorOnACurrentThreadRuntimeTask) {
  auto rt = spool::Builder::current_thread().build();
  std::atomic<bool> called{false};
  struct Body {
    static Task<std::string> run(std::atomic<bool>* called) {
      try {
        spool::block_in_place([called] { called->store(true); });
      } catch (const std::logic_error& e) {
        co_return std::string(e.what());
      }
      co_return std::string("no error");
    }
  };
  auto h = rt.spawn(Body::run(&called));
  std::string what = rt.block_on(h);
  EXPECT_NE(what.find("current_thread"), std::string::npos) << what;
  EXPECT_FALSE(called.load());
}

TEST(BlockInPlace, ThrowsLogicErrorInACurrentThreadBlockOnRoot) {
  auto rt = spool::Builder::current_thread().build();
  struct Root {
    static Task<bool> run() {
      try {
        spool::block_in_place([] {});
      } catch (const std::logic_error&) {
        co_return true;
      }
      co_return false;
    }
  };
  EXPECT_TRUE(rt.block_on(Root::run()));
}

TEST(BlockInPlace, OutsideAnyRuntimeJustCallsTheFunction) {
  EXPECT_EQ(spool::block_in_place([] { return 11; }), 11);
}

class BlockInPlaceAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(BlockInPlaceAnyFlavor);

// A blocking-pool thread is no worker, whatever the runtime's flavour.
TEST_P(BlockInPlaceAnyFlavor, OnABlockingPoolThreadJustCallsTheFunction) {
  auto rt = build(1);
  auto h = rt.spawn_blocking([] { return spool::block_in_place([] { return 12; }); });
  EXPECT_EQ(wait(rt, h), 12);
}

class SpawnBlockingAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(SpawnBlockingAnyFlavor);

// More cooperative points than a poll's budget, all ready at once; `escape` (set by the
// test's guard, only if the points stay pending for good) ends it early with -1.
Task<int> spend_budget_many_times(const std::atomic<bool>* escape) {
  for (int i = 0; i < 1000; ++i) {
    const bool escaped = co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
      if (escape->load()) return true;
      if (spool::consume_budget().poll(cx).is_ready()) return false;
      return spool::pending;
    });
    if (escaped) co_return -1;
  }
  co_return 7;
}

// A block_on inside a blocking call polls its own future, not the blocking task: the task's
// budget (spent after 128 points, then pending for good) and its cancel do not apply to it.
TEST_P(SpawnBlockingAnyFlavor, ABlockOnInsideTheCallHasABudgetOfItsOwn) {
  auto rt = build();
  spool::Handle handle = rt.handle();
  std::atomic<bool> escape{false};
  std::promise<void> done;
  std::thread guard([&escape, finished = done.get_future()] {
    if (finished.wait_for(60s) != std::future_status::ready) escape = true;
  });
  auto call = rt.spawn_blocking([&] { return handle.block_on(spend_budget_many_times(&escape)); });
  EXPECT_EQ(rt.block_on(std::move(call)), 7) << "the block_on's points stayed pending";
  done.set_value();
  guard.join();
}

TEST_P(SpawnBlockingAnyFlavor, ReturnsTheValueFromAnotherThread) {
  auto rt = build(1);
  auto h = rt.spawn_blocking([] { return std::this_thread::get_id(); });
  EXPECT_NE(wait(rt, h), std::this_thread::get_id());
}

TEST_P(SpawnBlockingAnyFlavor, AnExceptionIsAPanicWithTheOriginalNested) {
  auto rt = build(1);
  auto h = rt.spawn_blocking([]() -> int { throw std::invalid_argument("bad input"); });
  try {
    wait(rt, h);
    FAIL() << "expected JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_exception());
    EXPECT_THROW(std::rethrow_if_nested(e), std::invalid_argument);
  }
}

TEST_P(SpawnBlockingAnyFlavor, FromInsideATaskWithTheFreeFunction) {
  auto rt = build(2);
  struct Body {
    static Task<int> run() {
      auto h = spool::spawn_blocking([] { return 21; });
      co_return 2 * co_await h;
    }
  };
  EXPECT_EQ(wait(rt, rt.spawn(Body::run())), 42);
}

TEST_P(SpawnBlockingAnyFlavor, ABlockingThreadIsInTheRuntimeAndMayUseBlockOn) {
  auto rt = build(1);
  auto h = rt.spawn_blocking([] {
    // Handle::current works on a blocking-pool thread, and this thread is no event loop,
    // so blocking on a task's result here is allowed.
    auto child = spool::spawn(six());
    return spool::block_on(child) * 7;
  });
  EXPECT_EQ(wait(rt, h), 42);
}

TEST_P(SpawnBlockingAnyFlavor, RespectsTheMaximumThreadCountAndQueuesTheRest) {
  auto rt = builder(1).max_blocking_threads(2).thread_keep_alive(1h).build();
  Gate gate;
  std::latch two_running(2);
  std::atomic<int> running{0}, max_running{0};
  std::mutex ids_mutex;
  std::set<std::thread::id> ids;
  auto call = [&](int i) {
    return [&, i] {
      int now = running.fetch_add(1) + 1;
      int seen = max_running.load();
      while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
      }
      {
        std::lock_guard lock(ids_mutex);
        ids.insert(std::this_thread::get_id());
      }
      if (i < 2) two_running.count_down();
      gate.wait();
      running.fetch_sub(1);
      return i;
    };
  };
  std::vector<spool::JoinHandle<int>> hs;
  for (int i = 0; i < 4; ++i) hs.push_back(rt.spawn_blocking(call(i)));
  // The pool runs calls in FIFO order: the first two occupy both threads.
  two_running.wait();
  spool::RuntimeMetrics m = rt.metrics();
  EXPECT_EQ(m.blocking_threads, 2u);
  EXPECT_EQ(m.idle_blocking_threads, 0u);
  EXPECT_EQ(m.blocking_queue_depth, 2u);
  EXPECT_EQ(running.load(), 2);
  gate.open();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(wait(rt, hs[static_cast<std::size_t>(i)]), i);
  EXPECT_LE(max_running.load(), 2);
  EXPECT_EQ(ids.size(), 2u) << "four calls, two threads kept alive: each thread ran two";
  EXPECT_LE(rt.metrics().blocking_threads, 2u);
}

TEST_P(SpawnBlockingAnyFlavor, AnIdleThreadExitsAfterTheKeepAlive) {
  std::atomic<int> stops{0};
  auto rt =
      builder(1).thread_keep_alive(1ms).on_thread_stop([&] { spool_rt_test::bump(stops); }).build();
  auto h = rt.spawn_blocking([] { return 1; });
  EXPECT_EQ(wait(rt, h), 1);
  // Workers stop only at shutdown (a current-thread runtime has none), so the first stop is
  // the idle blocking thread retiring.
  spool_rt_test::wait_at_least(stops, 1);
  spool::RuntimeMetrics m = rt.metrics();
  EXPECT_EQ(m.blocking_threads, 0u);
  EXPECT_EQ(m.idle_blocking_threads, 0u);
  // The pool starts a new thread for the next call.
  auto again = rt.spawn_blocking([] { return 2; });
  EXPECT_EQ(wait(rt, again), 2);
}

// A keep-alive of nanoseconds::max() keeps an idle thread for ever: its wait's deadline
// saturates (now + keep-alive overflowed, UB, and the thread retired at once).
TEST_P(SpawnBlockingAnyFlavor, AnUnboundedKeepAliveKeepsTheIdleThread) {
  std::atomic<int> stops{0};
  auto rt = builder(1)
                .thread_keep_alive(std::chrono::nanoseconds::max())
                .on_thread_stop([&] { stops.fetch_add(1); })
                .build();
  auto first = wait(rt, rt.spawn_blocking([] { return std::this_thread::get_id(); }));
  // Wait until that thread is back in the pool, idle, waiting out its keep-alive.
  spool_rt_test::spin_until([&] { return rt.metrics().idle_blocking_threads == 1; });
  auto second = wait(rt, rt.spawn_blocking([] { return std::this_thread::get_id(); }));
  EXPECT_EQ(first, second);
  EXPECT_EQ(stops.load(), 0);
}

TEST_P(SpawnBlockingAnyFlavor, ALongKeepAliveReusesTheIdleThread) {
  std::mutex m;
  std::vector<std::thread::id> started;
  std::atomic<int> stops_while_running{0};
  {
    auto rt = builder(1)
                  .thread_keep_alive(1h)
                  .on_thread_start([&] {
                    std::lock_guard lock(m);
                    started.push_back(std::this_thread::get_id());
                  })
                  .on_thread_stop([&] { stops_while_running.fetch_add(1); })
                  .build();
    auto first = wait(rt, rt.spawn_blocking([] { return std::this_thread::get_id(); }));
    // Wait until that thread is back in the pool, idle (no notification exists for it).
    spool_rt_test::spin_until([&] { return rt.metrics().idle_blocking_threads == 1; });
    auto second = wait(rt, rt.spawn_blocking([] { return std::this_thread::get_id(); }));
    EXPECT_EQ(first, second);
    EXPECT_EQ(rt.metrics().blocking_threads, 1u);
    EXPECT_EQ(stops_while_running.load(), 0);
  }
  // Shut down: every thread has started and stopped. One worker (multi-thread; a
  // current-thread runtime has none) + one blocking thread; one more start would mean the
  // second call did not reuse the first thread.
  const std::size_t threads = is_multi_thread() ? 2 : 1;
  EXPECT_EQ(started.size(), threads);
  EXPECT_EQ(stops_while_running.load(), static_cast<int>(threads));
}

}  // namespace
