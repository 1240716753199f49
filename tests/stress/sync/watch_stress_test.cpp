// Stress (run under TSan): a watch channel counted up by tasks on a multi-thread runtime and
// by outside threads (send_modify), followed by tasks, by an outside thread under block_on and
// by one that cancels every changed() it starts before it waits, while another thread keeps
// borrowing through copies of a receiver. The invariants: every follower sees the value only
// grow and reaches exactly the number of increments (a lost wake-up hangs instead), and a
// sender's closed() completes once the followers have dropped their receivers.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "spool/sync/watch.hpp"

namespace watch_stress_test {
namespace {

constexpr std::uint64_t kProducers = 4;  // 2 tasks and 2 outside threads
constexpr std::uint64_t kSends = 250'000;
constexpr std::uint64_t kTotal = kProducers * kSends;
// 10^6 send_modify calls, each followed by a wake of the waiting followers.

// What one follower saw.
struct Seen {
  std::uint64_t last = 0;
  std::uint64_t changes = 0;
  bool growing = true;

  void add(std::uint64_t v) {
    growing = growing && v > last;
    last = v;
    ++changes;
  }
};

void expect_followed_to_the_end(const Seen& s) {
  EXPECT_EQ(s.last, kTotal) << "after " << s.changes << " changes";
  EXPECT_TRUE(s.growing);
}

spool::Task<void> count_up(spool::watch::Sender<std::uint64_t> tx) {
  for (std::uint64_t i = 1; i <= kSends; ++i) {
    tx.send_modify([](std::uint64_t& v) { ++v; });
    if (i % 16 == 0) co_await spool::yield_now();  // let the following tasks in
  }
}

// Follows the value to kTotal, then drops `rx`.
spool::Task<Seen> follow(spool::watch::Receiver<std::uint64_t> rx) {
  Seen s;
  while (s.last < kTotal) {
    EXPECT_TRUE(co_await rx.changed());  // a sender lives until every receiver is gone
    s.add(*rx.borrow_and_update());
  }
  co_return s;
}

// Holds a sender until every receiver is gone (then the channel closes for nobody).
spool::Task<void> wait_closed(spool::watch::Sender<std::uint64_t> tx) { co_await tx.closed(); }

TEST(WatchStress, TasksAndThreadsCountUpWhileFollowersCancelAndBorrow) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto [tx, rx] = spool::watch::channel<std::uint64_t>(0);
  std::vector<spool::JoinHandle<Seen>> tasks;
  for (int i = 0; i < 2; ++i) tasks.push_back(rt.spawn(follow(rx)));
  Seen by_block_on, by_canceller;
  std::vector<std::thread> followers;
  followers.emplace_back([rx = rx, &by_block_on]() mutable {
    while (by_block_on.last < kTotal) {
      EXPECT_TRUE(spool::block_on(rx.changed()));
      by_block_on.add(*rx.borrow_and_update());
    }
  });
  // Polls each changed() once and drops it if it would wait (a cancelled wait must lose
  // nothing), then waits for the next change under block_on.
  followers.emplace_back([rx = rx, &by_canceller]() mutable {
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    while (by_canceller.last < kTotal) {
      {
        auto first = rx.changed();
        auto p = first.poll(cx);
        if (p.is_ready()) {
          EXPECT_TRUE(p.value());
          by_canceller.add(*rx.borrow_and_update());
          continue;
        }
      }
      EXPECT_TRUE(spool::block_on(rx.changed()));
      by_canceller.add(*rx.borrow_and_update());
    }
  });
  // Copies of a receiver that borrow while the value changes (readers against the writers'
  // lock), until it reaches kTotal.
  followers.emplace_back([rx = rx] {
    std::uint64_t last = 0;
    while (last < kTotal) {
      auto copy = rx;
      const std::uint64_t v = *copy.borrow();
      EXPECT_GE(v, last);
      last = v;
      std::this_thread::yield();
    }
  });
  { auto unused = std::move(rx); }
  auto closed = rt.spawn(wait_closed(tx));
  std::vector<spool::JoinHandle<void>> producers;
  for (int i = 0; i < 2; ++i) producers.push_back(rt.spawn(count_up(tx)));
  std::vector<std::thread> producer_threads;
  for (std::uint64_t p = 2; p < kProducers; ++p) {
    producer_threads.emplace_back([tx = tx] {
      for (std::uint64_t i = 1; i <= kSends; ++i) tx.send_modify([](std::uint64_t& v) { ++v; });
    });
  }
  { auto gone = std::move(tx); }  // wait_closed's copy keeps the channel open
  for (auto& t : producer_threads) t.join();
  for (auto& p : producers) spool::block_on(std::move(p));
  for (auto& t : followers) t.join();
  for (auto& t : tasks) expect_followed_to_the_end(spool::block_on(std::move(t)));
  expect_followed_to_the_end(by_block_on);
  expect_followed_to_the_end(by_canceller);
  spool::block_on(std::move(closed));  // every receiver is gone: a hang would fail here
}

}  // namespace
}  // namespace watch_stress_test
