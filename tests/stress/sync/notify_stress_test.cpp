// Stress (run under TSan): Notify between producers (tasks and outside threads) and one
// consumer task, with a thread that starts Notified futures and cancels them (passing on a
// notification it was given); the invariant is that the consumer sees every event and never
// hangs (no lost wake-up). Then notify_waiters rounds: every waiter sees every round.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/sync.hpp"

namespace {

using spool::Notify;

constexpr int kProducerTasks = 2;
constexpr int kProducerThreads = 2;
constexpr std::int64_t kEventsEach = 100'000;
constexpr std::int64_t kEvents = (kProducerTasks + kProducerThreads) * kEventsEach;

struct Events {
  // Events made so far: incremented (seq_cst) by each producer before its notify_one; read
  // (seq_cst) by the consumer after its Notified completes. The Notify's own release/acquire
  // orders the increment before the read; the count itself only has to be exact.
  std::atomic<std::int64_t> produced{0};
  Notify notify;

  void produce() {
    produced.fetch_add(1);
    notify.notify_one();
  }
};

spool::Task<void> produce(Events* e) {
  for (std::int64_t i = 0; i < kEventsEach; ++i) {
    e->produce();
    if (i % 64 == 0) co_await spool::yield_now();
  }
}

spool::Task<std::int64_t> consume(Events* e) {
  std::int64_t consumed = 0;
  while (consumed < kEvents) {
    auto next = e->notify.notified();
    const std::int64_t now = e->produced.load();
    if (now > consumed) {
      consumed = now;
      continue;
    }
    co_await next;
  }
  co_return consumed;
}

TEST(NotifyStress, ProducersConsumerAndCancelledWaiters) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Events e;
  spool::JoinHandle<std::int64_t> consumer = rt.spawn(consume(&e));
  std::vector<spool::JoinHandle<void>> producers;
  for (int i = 0; i < kProducerTasks; ++i) producers.push_back(rt.spawn(produce(&e)));
  // Set (seq_cst) by the test thread once every event was consumed; polled (seq_cst) by the
  // canceller's loop. It publishes nothing else: the canceller only has to stop.
  std::atomic<bool> stop{false};
  std::thread canceller([&e, &stop] {
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    while (!stop.load()) {
      auto n = e.notify.notified();
      // A permit taken here is not ours to keep: hand it back. One picked while waiting
      // is passed on by the destructor.
      if (n.poll(cx).is_ready()) e.notify.notify_one();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kProducerThreads; ++t) {
    threads.emplace_back([&e] {
      for (std::int64_t i = 0; i < kEventsEach; ++i) e.produce();
    });
  }
  for (auto& t : threads) t.join();
  for (auto& p : producers) spool::block_on(std::move(p));
  EXPECT_EQ(spool::block_on(std::move(consumer)), kEvents);
  stop.store(true);
  canceller.join();
}

// Two tasks pass a turn back and forth through two Notify; a thread keeps starting and
// cancelling Notified futures on both (forwarding what it is given). Each turn needs its
// wake-up: one lost, and both tasks wait forever.
spool::Task<std::int64_t> take_turns(Notify* mine, Notify* theirs, std::int64_t rounds,
                                     bool starts) {
  std::int64_t done = 0;
  for (std::int64_t i = 0; i < rounds; ++i) {
    if (starts) theirs->notify_one();
    co_await mine->notified();
    if (!starts) theirs->notify_one();
    ++done;
  }
  co_return done;
}

TEST(NotifyStress, PingPongAcrossWorkersWithCancelledWaiters) {
  constexpr std::int64_t kRounds = 200'000;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Notify ping, pong;
  spool::JoinHandle<std::int64_t> a = rt.spawn(take_turns(&ping, &pong, kRounds, true));
  spool::JoinHandle<std::int64_t> b = rt.spawn(take_turns(&pong, &ping, kRounds, false));
  // Set (seq_cst) by the test thread after both players finished; polled (seq_cst) by the
  // canceller's loop. It publishes nothing else: the canceller only has to stop.
  std::atomic<bool> stop{false};
  std::thread canceller([&] {
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    for (std::int64_t i = 0; !stop.load(); ++i) {
      Notify& n = i % 2 == 0 ? ping : pong;
      auto f = n.notified();
      if (f.poll(cx).is_ready()) n.notify_one();  // not ours: hand it back
    }
  });
  EXPECT_EQ(spool::block_on(std::move(a)), kRounds);
  EXPECT_EQ(spool::block_on(std::move(b)), kRounds);
  stop.store(true);
  canceller.join();
}

spool::Task<std::int64_t> follow_rounds(Notify* n, std::atomic<std::int64_t>* round,
                                        std::atomic<std::int64_t>* arrivals, std::int64_t rounds) {
  std::int64_t seen = 0;
  for (std::int64_t r = 1; r <= rounds; ++r) {
    auto next = n->notified();  // made before the check: a notify_waiters after it counts
    if (round->load() < r) co_await next;
    ++seen;
    arrivals->fetch_add(1);
  }
  co_return seen;
}

TEST(NotifyStress, NotifyWaitersRounds) {
  constexpr int kWaiters = 8;
  constexpr std::int64_t kRounds = 5'000;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Notify n;
  // `round`: stored (seq_cst) by the test thread before each notify_waiters, loaded (seq_cst)
  // by the waiters after making their Notified (so a round they miss in the load is one whose
  // notify_waiters completes that Notified). `arrivals`: incremented (seq_cst) by each waiter
  // per round, loaded (seq_cst) by the test thread, which waits for all of a round.
  std::atomic<std::int64_t> round{0}, arrivals{0};
  std::vector<spool::JoinHandle<std::int64_t>> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(rt.spawn(follow_rounds(&n, &round, &arrivals, kRounds)));
  }
  for (std::int64_t r = 1; r <= kRounds; ++r) {
    round.store(r);
    n.notify_waiters();
    spool_test::spin_until([&] { return arrivals.load() >= kWaiters * r; });
  }
  for (auto& w : waiters) EXPECT_EQ(spool::block_on(std::move(w)), kRounds);
}

}  // namespace
