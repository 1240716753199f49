// Stress (run under TSan): a Semaphore shared by tasks, outside threads and a thread that
// starts acquires and cancels them, with acquires of 1 to 4 permits; the invariants are that
// the permits held at once never exceed the total, that every acquire is counted exactly,
// and that the semaphore has all its permits back at the end (none lost to a cancellation).
// Then close() racing with acquirers: every acquirer ends (permit or AcquireError), none
// hangs, and no permit is lost.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/sync.hpp"

namespace semaphore_stress_test {
namespace {

using spool::AcquireError;
using spool::Semaphore;
using spool::SemaphorePermit;

constexpr std::size_t kPermits = 4;

// Permits held right now, summed over all holders: must never exceed kPermits.
struct Ledger {
  // Added (seq_cst fetch_add) by a holder right after its acquire, subtracted right before its
  // release: the semaphore orders a release before the acquire that reuses the permits, so
  // the sum exceeds kPermits only if the semaphore handed out too many.
  std::atomic<std::int64_t> held{0};
  // Set (seq_cst) by the holder that saw the sum exceed kPermits; read after every join.
  std::atomic<bool> overdrawn{false};

  void hold(std::size_t n) {
    if (held.fetch_add(static_cast<std::int64_t>(n)) + static_cast<std::int64_t>(n) >
        static_cast<std::int64_t>(kPermits)) {
      overdrawn.store(true);
    }
  }
  void drop(std::size_t n) { held.fetch_sub(static_cast<std::int64_t>(n)); }
};

std::size_t want(std::int64_t who, std::int64_t round) {
  return 1 + static_cast<std::size_t>((who + round) % static_cast<std::int64_t>(kPermits));
}

spool::Task<void> acquire_rounds(Semaphore* s, Ledger* ledger, std::int64_t who,
                                 std::int64_t rounds) {
  for (std::int64_t i = 0; i < rounds; ++i) {
    const std::size_t n = want(who, i);
    SemaphorePermit p = co_await s->acquire(n);
    ledger->hold(n);
    ledger->drop(n);
  }
}

TEST(SemaphoreStress, TasksThreadsAndCancelledAcquires) {
  constexpr int kTasks = 6;
  constexpr std::int64_t kTaskRounds = 130'000;
  constexpr int kThreads = 2;
  constexpr std::int64_t kThreadRounds = 60'000;
  constexpr std::int64_t kCancelRounds = 100'000;
  // 6 x 130,000 + 2 x 60,000 + 100,000 = 10^6 acquires (some of them cancelled).
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Semaphore s(kPermits);
  Ledger ledger;
  std::vector<spool::JoinHandle<void>> tasks;
  for (int i = 0; i < kTasks; ++i) {
    tasks.push_back(rt.spawn(acquire_rounds(&s, &ledger, i, kTaskRounds)));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&s, &ledger, t] {
      for (std::int64_t i = 0; i < kThreadRounds; ++i) {
        const std::size_t n = want(t, i);
        SemaphorePermit p = spool::block_on(s.acquire(n));
        ledger.hold(n);
        ledger.drop(n);
      }
    });
  }
  threads.emplace_back([&s, &ledger] {
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    for (std::int64_t i = 0; i < kCancelRounds; ++i) {
      const std::size_t n = want(7, i);
      auto acquire = s.acquire(n);
      auto p = acquire.poll(cx);  // then dropped: waiting, handed permits, or granted
      if (p.is_ready()) {
        ledger.hold(n);
        ledger.drop(n);
      }
    }
  });
  for (auto& t : tasks) spool::block_on(std::move(t));
  for (auto& t : threads) t.join();
  EXPECT_FALSE(ledger.overdrawn.load()) << "more permits were held at once than exist";
  EXPECT_EQ(ledger.held.load(), 0);
  EXPECT_EQ(s.available_permits(), kPermits) << "permits were lost";
}

spool::Task<std::int64_t> acquire_until_closed(Semaphore* s, std::atomic<std::int64_t>* granted) {
  std::int64_t mine = 0;
  for (;;) {
    try {
      SemaphorePermit p = co_await s->acquire(1);
      ++mine;
      granted->fetch_add(1);
      co_await spool::yield_now();
    } catch (const AcquireError&) {
      co_return mine;
    }
  }
}

TEST(SemaphoreStress, CloseRacesWithAcquirers) {
  constexpr int kRepeats = 200;
  constexpr int kTasks = 16;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  for (int r = 0; r < kRepeats; ++r) {
    Semaphore s(2);
    // Acquires granted so far: incremented (seq_cst) by the tasks, read by the test thread to
    // pick the moment of the close, and after the joins for the exact total.
    std::atomic<std::int64_t> granted{0};
    std::vector<spool::JoinHandle<std::int64_t>> tasks;
    for (int i = 0; i < kTasks; ++i) tasks.push_back(rt.spawn(acquire_until_closed(&s, &granted)));
    const std::int64_t close_after = 20 + r % 50;
    spool_test::spin_until([&] { return granted.load() >= close_after; });
    s.close();
    std::int64_t total = 0;
    for (auto& t : tasks) total += spool::block_on(std::move(t));
    EXPECT_EQ(total, granted.load());
    EXPECT_EQ(s.available_permits(), 2u) << "permits were lost across close()";
  }
}

}  // namespace
}  // namespace semaphore_stress_test
