// Stress (run under TSan): wake storms across workers and threads, ping-pong between tasks,
// and the rule that one task is never polled by two threads at once, however many threads
// hammer its waker.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_sanitizer.hpp"
#include "support/rt_tokens.hpp"

namespace {

using spool::Task;
using spool_rt_test::scaled;

using spool_rt_test::Tokens;

Task<std::int64_t> take_n(Tokens* tokens, std::int64_t n) {
  std::int64_t taken = 0;
  for (; taken < n; ++taken) co_await tokens->take();
  co_return taken;
}

Task<void> give_all_from_task(std::vector<std::unique_ptr<Tokens>>* all, std::int64_t per_taker,
                              std::uint64_t seed) {
  // Each round gives every taker one token, starting at a pseudo-random taker, and the
  // task yields now and then so that wakes from this worker interleave with everyone else's.
  std::uint64_t s = seed | 1;
  for (std::int64_t round = 0; round < per_taker; ++round) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    for (std::size_t i = 0; i < all->size(); ++i) (*all)[(i + s) % all->size()]->give();
    if (round % 8 == 0) co_await spool::yield_now();
  }
}

// Takers wait for tokens; outside threads and tasks on the workers give them, all at once.
// Every token is taken exactly once: a lost wake-up would leave a taker pending forever.
TEST(WakeStress, WakeStormFromThreadsAndTasks) {
  constexpr std::size_t kTakers = 32;
  constexpr int kGiverThreads = 2;
  constexpr int kGiverTasks = 2;
  constexpr std::int64_t kPerGiver = scaled(2'000, 1'500);  // tokens per giver per taker
  constexpr std::int64_t kPerTaker = (kGiverThreads + kGiverTasks) * kPerGiver;
  auto rt = spool::Builder::multi_thread().worker_threads(3).build();
  std::vector<std::unique_ptr<Tokens>> tokens;
  std::vector<spool::JoinHandle<std::int64_t>> takers;
  for (std::size_t i = 0; i < kTakers; ++i) {
    tokens.push_back(std::make_unique<Tokens>());
    takers.push_back(rt.spawn(take_n(tokens.back().get(), kPerTaker)));
  }
  std::vector<spool::JoinHandle<void>> giver_tasks;
  for (int g = 0; g < kGiverTasks; ++g)
    giver_tasks.push_back(rt.spawn(give_all_from_task(&tokens, kPerGiver, 0x1234u + g)));
  std::vector<std::thread> giver_threads;
  for (int g = 0; g < kGiverThreads; ++g) {
    giver_threads.emplace_back([&tokens] {
      for (std::int64_t round = 0; round < kPerGiver; ++round)
        for (auto& t : tokens) t->give();
    });
  }
  for (auto& t : giver_threads) t.join();
  for (auto& g : giver_tasks) spool::block_on(g);
  for (auto& h : takers) EXPECT_EQ(spool::block_on(h), kPerTaker);
}

Task<std::int64_t> ping(Tokens* mine, Tokens* other, std::int64_t rounds) {
  for (std::int64_t i = 0; i < rounds; ++i) {
    other->give();
    co_await mine->take();
  }
  co_return rounds;
}

Task<std::int64_t> pong(Tokens* mine, Tokens* other, std::int64_t rounds) {
  for (std::int64_t i = 0; i < rounds; ++i) {
    co_await mine->take();
    other->give();
  }
  co_return rounds;
}

TEST(WakeStress, PingPongPairsAcrossWorkers) {
  constexpr int kPairs = 8;
  constexpr std::int64_t kRounds = scaled(20'000, 10'000);
  for (bool lifo : {true, false}) {
    auto rt = spool::Builder::multi_thread().worker_threads(3).lifo_slot(lifo).build();
    std::vector<std::unique_ptr<Tokens>> a, b;
    std::vector<spool::JoinHandle<std::int64_t>> hs;
    for (int p = 0; p < kPairs; ++p) {
      a.push_back(std::make_unique<Tokens>());
      b.push_back(std::make_unique<Tokens>());
      hs.push_back(rt.spawn(ping(a.back().get(), b.back().get(), kRounds)));
      hs.push_back(rt.spawn(pong(b.back().get(), a.back().get(), kRounds)));
    }
    for (auto& h : hs) EXPECT_EQ(spool::block_on(h), kRounds);
  }
}

// A leaf that detects concurrent polls: the in_poll flag must be clear on entry, and the
// plain counter is a data race (reported by TSan) if two threads ever poll at once.
struct ExclusiveLeaf {
  struct Shared {
    // Written by poll(): acq_rel exchange to true on entry (acquire pairs with the previous
    // poll's release store of false on exit); two overlapping polls would see true.
    std::atomic<bool> in_poll{false};
    // Written by poll() on an overlap (seq_cst fetch_add); read by the test (seq_cst load) after
    // block_on of the target: its completion (release/acquire) follows every poll.
    std::atomic<int> violations{0};
    // Written by poll() (relaxed fetch_add); read by the test (seq_cst load) after block_on of
    // the target, whose completion orders every poll before it, so relaxed suffices.
    std::atomic<std::int64_t> polls{0};
    std::int64_t plain_polls = 0;  // touched only inside poll, without synchronisation
    // Written by the test (release store) before the final wake; read by poll() (acquire load),
    // which pairs with that store, so the poll that the wake causes sees true.
    std::atomic<bool> stop{false};
    std::promise<spool::Waker> first_waker;
    bool published = false;  // inside poll only
  };
  Shared* s;

  spool::Poll<void> poll(spool::Context& cx) {
    if (s->in_poll.exchange(true, std::memory_order_acq_rel)) s->violations.fetch_add(1);
    ++s->plain_polls;
    s->polls.fetch_add(1, std::memory_order_relaxed);
    if (!s->published) {
      s->published = true;
      s->first_waker.set_value(cx.waker());
    }
    bool done = s->stop.load(std::memory_order_acquire);
    s->in_poll.store(false, std::memory_order_release);
    if (done) return spool::Poll<void>::ready();
    // No waker is stored: the hammering threads hold clones from the first poll, and the
    // final wake after `stop` also comes through one. (Every clone wakes the same task.)
    return spool::pending;
  }
};

Task<void> await_exclusive(ExclusiveLeaf leaf) { co_await leaf; }

Task<void> hammer_from_task(spool::Waker w, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    w.wake_by_ref();
    if (i % 16 == 0) co_await spool::yield_now();
  }
}

TEST(WakeStress, NeverTwoThreadsPollOneTask) {
  constexpr int kTargets = 4;
  constexpr int kHammerThreads = 3;
  constexpr std::int64_t kWakes = scaled(200'000, 100'000);
  auto rt = spool::Builder::multi_thread().worker_threads(3).build();
  std::vector<std::unique_ptr<ExclusiveLeaf::Shared>> shared;
  std::vector<spool::JoinHandle<void>> targets;
  std::vector<spool::Waker> wakers;
  for (int i = 0; i < kTargets; ++i) {
    shared.push_back(std::make_unique<ExclusiveLeaf::Shared>());
    auto first = shared.back()->first_waker.get_future();
    targets.push_back(rt.spawn(await_exclusive(ExclusiveLeaf{shared.back().get()})));
    wakers.push_back(first.get());
  }
  std::vector<spool::JoinHandle<void>> hammer_tasks;
  for (int i = 0; i < kTargets; ++i)
    hammer_tasks.push_back(rt.spawn(hammer_from_task(wakers[static_cast<std::size_t>(i)], kWakes)));
  std::vector<std::thread> hammers;
  for (int h = 0; h < kHammerThreads; ++h) {
    hammers.emplace_back([&wakers, h] {
      std::vector<spool::Waker> mine(wakers.begin(), wakers.end());  // clones, concurrently
      for (std::int64_t i = 0; i < kWakes; ++i)
        mine[static_cast<std::size_t>((i + h) % kTargets)].wake_by_ref();
    });
  }
  for (auto& t : hammers) t.join();
  for (auto& t : hammer_tasks) spool::block_on(t);
  for (int i = 0; i < kTargets; ++i) {
    shared[static_cast<std::size_t>(i)]->stop.store(true, std::memory_order_release);
    wakers[static_cast<std::size_t>(i)].wake_by_ref();
  }
  for (auto& t : targets) spool::block_on(t);
  for (auto& s : shared) {
    EXPECT_EQ(s->violations.load(), 0);
    EXPECT_EQ(s->plain_polls, s->polls.load());
    EXPECT_GE(s->polls.load(), 2);
  }
}

}  // namespace
