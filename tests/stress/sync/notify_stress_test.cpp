// Stress (run under TSan): 10^6 notify_one calls from producers (tasks and outside
// threads) to one consumer task, with a thread that starts Notified futures and cancels them
// (passing on a notification it was given); the consumer counts its own wake-ups (never more
// than the notify_one calls) and ends only through the last producer's notification (a lost
// wake-up hangs it), then a handshake checks that at most one permit was stored. Then
// ping-pong between workers and notify_waiters rounds: every waiter sees every round.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/sync.hpp"

namespace notify_stress_test {
namespace {

using spool::Notify;

constexpr int kProducerTasks = 2;
constexpr int kProducerThreads = 2;
constexpr int kProducers = kProducerTasks + kProducerThreads;
constexpr std::int64_t kEventsEach = 250'000;
constexpr std::int64_t kEvents = kProducers * kEventsEach;  // 10^6 notify_one calls

struct Events {
  // notify_one calls made by the producers: incremented (relaxed) by each producer before
  // each of its notify_one; loaded by the test thread after every producer was joined.
  std::atomic<std::int64_t> sent{0};
  // Producers not yet finished: decremented (seq_cst) by each producer after its last event
  // and before its last notify_one; loaded (seq_cst) by the consumer after it made the
  // Notified it would wait on, so the last producer's notify_one completes that Notified
  // (or leaves a permit for it) — a lost wake-up there and the consumer never ends.
  std::atomic<int> producers_left{kProducers};
  Notify notify;

  void produce() {
    sent.fetch_add(1, std::memory_order_relaxed);
    notify.notify_one();
  }
  void finish() {
    producers_left.fetch_sub(1);
    produce();
  }
};

spool::Task<void> produce(Events* e) {
  for (std::int64_t i = 1; i < kEventsEach; ++i) {
    e->produce();
    if (i % 64 == 0) co_await spool::yield_now();
  }
  e->finish();
}

// Counts its own wake-ups (Notified futures that completed), independently of what was
// sent: each takes one notify_one (a stored permit or a direct wake), and notify_one
// stores at most one permit, so wake-ups <= notify_one calls.
spool::Task<std::int64_t> consume(Events* e) {
  std::int64_t woken = 0;
  for (;;) {
    auto next = e->notify.notified();
    if (e->producers_left.load() == 0) break;
    co_await next;
    ++woken;
  }
  co_return woken;
}

// A fresh Notified polled once: true when it took a stored permit.
bool take_permit(Notify& n) {
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  auto f = n.notified();
  return f.poll(cx).is_ready();
}

TEST(NotifyStress, ProducersConsumerAndCancelledWaiters) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Events e;
  spool::JoinHandle<std::int64_t> consumer = rt.spawn(consume(&e));
  std::vector<spool::JoinHandle<void>> producers;
  for (int i = 0; i < kProducerTasks; ++i) producers.push_back(rt.spawn(produce(&e)));
  // Set (seq_cst) by the test thread once the consumer is done; polled (seq_cst) by the
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
      for (std::int64_t i = 1; i < kEventsEach; ++i) e.produce();
      e.finish();
    });
  }
  for (auto& t : threads) t.join();
  for (auto& p : producers) spool::block_on(std::move(p));
  const std::int64_t woken = spool::block_on(std::move(consumer));
  stop.store(true);
  canceller.join();
  EXPECT_EQ(e.sent.load(std::memory_order_relaxed), kEvents);
  EXPECT_LE(woken, kEvents) << "more wake-ups than notify_one calls";
  // Handshake: everything is quiet now. At most one permit is left; after it is taken, a
  // notify_one with nobody waiting stores exactly one (a second one adds nothing), and a
  // waiter that comes after it takes it at once.
  const bool left = take_permit(e.notify);
  EXPECT_FALSE(take_permit(e.notify)) << "more than one permit stored (left: " << left << ")";
  e.notify.notify_one();
  e.notify.notify_one();
  EXPECT_TRUE(take_permit(e.notify));
  EXPECT_FALSE(take_permit(e.notify));
  // And a waiting consumer is woken by the next notify_one, exactly once.
  spool::JoinHandle<std::int64_t> last = rt.spawn([](Notify* n) -> spool::Task<std::int64_t> {
    co_await n->notified();
    co_return 1;
  }(&e.notify));
  e.notify.notify_one();
  EXPECT_EQ(spool::block_on(std::move(last)), 1);
  EXPECT_FALSE(take_permit(e.notify));
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
}  // namespace notify_stress_test
