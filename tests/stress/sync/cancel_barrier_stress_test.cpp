// Stress (run under TSan): child tokens made and awaited on several threads while another
// cancels the root (every waiter completes, every child ends cancelled); a barrier crossed
// by tasks and outside threads generation after generation (exactly one leader each).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/sync.hpp"

namespace {

using spool::Barrier;
using spool::CancellationToken;

TEST(CancelBarrierStress, ChildrenMadeAndAwaitedWhileTheRootIsCancelled) {
  constexpr int kRounds = 200;
  constexpr int kThreads = 3;
  constexpr int kChildrenPerThread = 20;
  for (int round = 0; round < kRounds; ++round) {
    CancellationToken root;
    // Children made so far (each thread waits after its first, so at most kThreads before
    // the cancel). Relaxed: only a trigger for the canceller.
    std::atomic<int> made{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&root, &made] {
        for (int i = 0; i < kChildrenPerThread; ++i) {
          CancellationToken child = root.child_token().child_token();
          made.fetch_add(1, std::memory_order_relaxed);
          spool::block_on(child.cancelled());  // returns only once the root is cancelled
          EXPECT_TRUE(child.is_cancelled());
        }
      });
    }
    std::thread canceller([&] {
      spool_test::spin_until(
          [&] { return made.load(std::memory_order_relaxed) > round % kThreads; });
      root.cancel();
    });
    for (auto& t : threads) t.join();
    canceller.join();
  }
}

constexpr int kParties = 6;  // 4 tasks + 2 threads
constexpr int kGenerations = 2'000;

spool::Task<int> cross(Barrier* b) {
  int led = 0;
  for (int g = 0; g < kGenerations; ++g) led += (co_await b->wait()).is_leader() ? 1 : 0;
  co_return led;
}

TEST(CancelBarrierStress, TasksAndThreadsCrossABarrier) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Barrier b(kParties);
  std::vector<spool::JoinHandle<int>> tasks;
  for (int i = 0; i < 4; ++i) tasks.push_back(rt.spawn(cross(&b)));
  std::atomic<int> thread_leads{0};  // relaxed: read after join
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int g = 0; g < kGenerations; ++g) {
        if (spool::block_on(b.wait()).is_leader()) {
          thread_leads.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  int leaders = 0;
  for (auto& t : tasks) leaders += spool::block_on(std::move(t));
  for (auto& t : threads) t.join();
  EXPECT_EQ(leaders + thread_leads.load(std::memory_order_relaxed), kGenerations);
}

}  // namespace
