// Stress (run under TSan): one Mutex hammered by tasks on a multi-thread runtime, by outside
// threads through block_on, and by a thread that starts lock futures and cancels them; the
// invariant is the exact count of increments, and that the lock is free at the end (no
// hand-off lost to a cancelled waiter).
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "spool/spool.hpp"

namespace mutex_stress_test {
namespace {

using spool::Mutex;

constexpr int kTasks = 8;
constexpr std::int64_t kTaskRounds = 110'000;
constexpr int kThreads = 2;
constexpr std::int64_t kThreadRounds = 60'000;
constexpr std::int64_t kCancelRounds = 50'000;
// Locks taken: 8 x 110,000 + 2 x 60,000 = 10^6, plus up to 50,000 by the canceller (whose
// other lock futures are cancelled) and the final check.
static_assert(kTasks * kTaskRounds + kThreads * kThreadRounds >= 1'000'000);

// A non-atomic counter: TSan reports any increment the mutex failed to order.
struct Counter {
  std::int64_t value = 0;
};

spool::Task<void> increment(Mutex<Counter>* m, std::int64_t rounds) {
  for (std::int64_t i = 0; i < rounds; ++i) {
    auto g = co_await m->lock();
    ++g->value;
  }
}

TEST(MutexStress, TasksThreadsAndCancelledLockers) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Mutex<Counter> m;
  std::vector<spool::JoinHandle<void>> tasks;
  for (int i = 0; i < kTasks; ++i) tasks.push_back(rt.spawn(increment(&m, kTaskRounds)));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&m] {
      for (std::int64_t i = 0; i < kThreadRounds; ++i) ++spool::block_on(m.lock())->value;
    });
  }
  // Polls a lock future once and drops it: ready (it increments), or waiting (cancelled
  // from the queue, or cancelled after the lock was handed to it: it must pass it on).
  std::int64_t cancel_side = 0;
  threads.emplace_back([&m, &cancel_side] {
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    for (std::int64_t i = 0; i < kCancelRounds; ++i) {
      auto lock = m.lock();
      auto p = lock.poll(cx);
      if (p.is_ready()) {
        ++p.value()->value;
        ++cancel_side;
      }
    }
  });
  for (auto& t : tasks) spool::block_on(std::move(t));
  for (auto& t : threads) t.join();
  auto g = m.try_lock();
  ASSERT_TRUE(g.has_value()) << "the lock was left held: a hand-off was lost";
  EXPECT_EQ((*g)->value, kTasks * kTaskRounds + kThreads * kThreadRounds + cancel_side);
}

}  // namespace
}  // namespace mutex_stress_test
