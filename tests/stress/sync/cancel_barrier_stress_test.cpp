// Stress (run under TSan): child tokens made, and their cancelled() futures polled, dropped
// and awaited, on two threads while a third cancels each round's root (every awaited future
// completes exactly once, every child ends cancelled); a barrier crossed by tasks and an
// outside thread generation after generation (exactly one leader each, every wait counted).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_sanitizer.hpp"
#include "support/sync.hpp"

namespace cancel_barrier_stress_test {
namespace {

using spool::Barrier;
using spool::CancellationToken;

constexpr std::int64_t kRounds = spool_rt_test::scaled_for_sanitizers(25'000, 10'000);
constexpr int kThreads = 2;
constexpr std::int64_t kChildrenPerThread = 10;  // per round; each makes a grandchild too
// Tokens made: 25,000 x 2 x 10 x 2 = 10^6; cancelled() futures: 500,000 (half awaited,
// half dropped after one poll); cancels: 25,000. 1,525,000 operations (2/5 of them under a
// sanitizer).

struct CancelCounts {
  std::int64_t tokens = 0;         // child_token() calls
  std::int64_t futures = 0;        // cancelled() futures made
  std::int64_t completed = 0;      // awaited futures that completed (each exactly once)
  std::int64_t dropped = 0;        // futures dropped after one poll
  std::int64_t not_cancelled = 0;  // children seen uncancelled after their future completed
};

TEST(CancelBarrierStress, ChildrenMadeAndAwaitedWhileTheRootIsCancelled) {
  std::vector<CancellationToken> roots(kRounds);
  // Children made so far, over all rounds: incremented (relaxed) by each making thread per
  // child, loaded (relaxed) by the canceller only as a trigger — it reads nothing through it.
  std::atomic<std::int64_t> made{0};
  std::vector<CancelCounts> counts(kThreads);  // each thread's own, read after its join
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&roots, &made, &c = counts[t]] {
      spool::Waker w = spool::Waker::noop();
      spool::Context cx(w);
      std::vector<CancellationToken> children;
      std::deque<spool::WaitForCancellation> waits;
      for (std::int64_t r = 0; r < kRounds; ++r) {
        children.clear();
        waits.clear();
        for (std::int64_t i = 0; i < kChildrenPerThread; ++i) {
          children.push_back(roots[r].child_token().child_token());
          c.tokens += 2;
          made.fetch_add(1, std::memory_order_relaxed);
          // In place (a waiting future cannot move; a deque never moves its elements).
          waits.push_back(children.back().cancelled());
          ++c.futures;
          // Polled once: ready only if the root was cancelled already. The even ones that
          // wait are awaited below; the odd ones are dropped (cancelled while they wait, or
          // after they were woken).
          if (waits.back().poll(cx).is_ready()) {
            ++c.completed;
            waits.pop_back();
          } else if (i % 2 == 1) {
            ++c.dropped;
            waits.pop_back();
          }
        }
        for (auto& f : waits) {
          spool::block_on(f);  // returns only once the root is cancelled
          ++c.completed;
        }
        for (const auto& child : children) c.not_cancelled += child.is_cancelled() ? 0 : 1;
      }
    });
  }
  std::thread canceller([&] {
    for (std::int64_t r = 0; r < kRounds; ++r) {
      // No thread leaves round r before this cancel, so these children are round r's.
      const std::int64_t before = r * kThreads * kChildrenPerThread;
      spool_test::spin_until([&] {
        return made.load(std::memory_order_relaxed) > before + r % (kThreads * kChildrenPerThread);
      });
      roots[r].cancel();
    }
  });
  for (auto& t : threads) t.join();
  canceller.join();
  CancelCounts sum;
  for (const auto& c : counts) {
    sum.tokens += c.tokens;
    sum.futures += c.futures;
    sum.completed += c.completed;
    sum.dropped += c.dropped;
    sum.not_cancelled += c.not_cancelled;
  }
  EXPECT_EQ(sum.tokens, 2 * kRounds * kThreads * kChildrenPerThread);
  EXPECT_EQ(sum.futures, kRounds * kThreads * kChildrenPerThread);
  EXPECT_EQ(sum.completed + sum.dropped, sum.futures);
  EXPECT_GE(sum.completed, sum.futures / 2);  // the even ones are never dropped
  EXPECT_EQ(sum.not_cancelled, 0);
  EXPECT_EQ(made.load(std::memory_order_relaxed), kRounds * kThreads * kChildrenPerThread);
  for (const auto& root : roots) EXPECT_TRUE(root.is_cancelled());
}

constexpr int kTaskParties = 3;
constexpr int kParties = kTaskParties + 1;  // and an outside thread under block_on
// 10^6 waits (400,000 under a sanitizer).
constexpr int kGenerations =
    static_cast<int>(spool_rt_test::scaled_for_sanitizers(250'000, 100'000));

// Per generation, its leaders: incremented (relaxed) by the leader of that generation,
// loaded (relaxed) by the test thread after the tasks' JoinHandles and the thread's join.
using Leaders = std::vector<std::atomic<std::uint8_t>>;

spool::Task<std::int64_t> cross(Barrier* b, Leaders* leaders) {
  std::int64_t waits = 0;
  for (int g = 0; g < kGenerations; ++g) {
    const bool leader = (co_await b->wait()).is_leader();
    if (leader) (*leaders)[g].fetch_add(1, std::memory_order_relaxed);
    ++waits;
  }
  co_return waits;
}

TEST(CancelBarrierStress, TasksAndThreadsCrossABarrier) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Barrier b(kParties);
  Leaders leaders(kGenerations);
  std::vector<spool::JoinHandle<std::int64_t>> tasks;
  for (int i = 0; i < kTaskParties; ++i) tasks.push_back(rt.spawn(cross(&b, &leaders)));
  std::int64_t thread_waits = 0;  // the thread's own, read after its join
  std::thread thread([&] {
    for (int g = 0; g < kGenerations; ++g) {
      if (spool::block_on(b.wait()).is_leader()) {
        leaders[g].fetch_add(1, std::memory_order_relaxed);
      }
      ++thread_waits;
    }
  });
  std::int64_t waits = 0;
  for (auto& t : tasks) waits += spool::block_on(std::move(t));
  thread.join();
  waits += thread_waits;
  EXPECT_EQ(waits, std::int64_t{kParties} * kGenerations);
  std::int64_t generations_led = 0, not_one = 0;
  for (const auto& l : leaders) {
    const std::uint8_t n = l.load(std::memory_order_relaxed);
    generations_led += n;
    not_one += n == 1 ? 0 : 1;
  }
  EXPECT_EQ(not_one, 0) << "generations without exactly one leader";
  EXPECT_EQ(generations_led, kGenerations);
}

}  // namespace
}  // namespace cancel_barrier_stress_test
