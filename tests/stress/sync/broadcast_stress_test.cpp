// Stress (run under TSan): a broadcast channel of capacity 64 fed by tasks on a multi-thread
// runtime and by outside threads, read by tasks, by an outside thread under block_on and by
// one that cancels every receive it starts before it waits, while another thread subscribes
// and drops receivers. The invariant, per receiver: every message sent is either received or
// counted as missed by a lag, exactly once (received + missed == sent), and the messages of
// each producer arrive in the order they were sent. The messages count their live copies and
// carry a checksum: a receiver handed a moved-from message (one moved out of its slot while
// another receiver still had to read it) sees it broken, and none may be left or destroyed
// twice once the channel is gone.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "spool/sync/broadcast.hpp"
#include "support/checked_payload.hpp"

namespace broadcast_stress_test {
namespace {

constexpr std::uint64_t kProducers = 4;  // 2 tasks and 2 outside threads
constexpr std::uint64_t kSends = 125'000;
constexpr std::uint64_t kSent = kProducers * kSends;
// 500,000 sends; each of the 4 receivers accounts for all of them (a receive each, or a
// share of a lag): >= 10^6 operations.

using Payload = spool_test::CheckedPayload;

// A message: its producer in the high half, its sequence number (from 1) in the low half.
constexpr std::uint64_t message(std::uint64_t producer, std::uint64_t seq) {
  return producer << 32 | seq;
}

// What one receiver saw.
struct Seen {
  std::uint64_t received = 0;
  std::uint64_t missed = 0;
  std::uint64_t lags = 0;
  std::array<std::uint64_t, kProducers> last{};  // the last sequence number seen per producer
  bool in_order = true;
  std::uint64_t broken = 0;  // messages received moved-from (checksum broken)

  // Accounts for one outcome; false at the end.
  bool add(spool::broadcast::RecvResult<Payload>& r) {
    if (r.closed()) return false;
    if (r.lagged()) {
      missed += r.missed();
      ++lags;
      return true;
    }
    if (!r.value().intact()) {
      ++broken;
      ++received;
      return true;
    }
    const std::uint64_t v = r.value().value();
    std::uint64_t& last_seq = last[v >> 32];
    in_order = in_order && (v & 0xffffffffu) > last_seq;
    last_seq = v & 0xffffffffu;
    ++received;
    return true;
  }
};

void expect_all_accounted(const Seen& s) {
  EXPECT_EQ(s.received + s.missed, kSent)
      << "received " << s.received << ", missed " << s.missed << " in " << s.lags << " lags";
  EXPECT_TRUE(s.in_order);
  EXPECT_EQ(s.broken, 0u) << "moved-from messages received";
}

spool::Task<void> send_task(spool::broadcast::Sender<Payload> tx, std::atomic<std::int64_t>* live,
                            std::uint64_t producer) {
  for (std::uint64_t i = 1; i <= kSends; ++i) {
    EXPECT_TRUE(tx.send(Payload(*live, message(producer, i))));
    if (i % 16 == 0) co_await spool::yield_now();  // let the receiving tasks in
  }
}

spool::Task<Seen> receive_task(spool::broadcast::Receiver<Payload> rx) {
  Seen s;
  for (;;) {
    auto r = co_await rx.recv();
    if (!s.add(r)) break;
  }
  co_return s;
}

void tasks_and_threads_with_lag_cancellation_and_churn(std::atomic<std::int64_t>& live) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto [tx, rx] = spool::broadcast::channel<Payload>(64);  // small: receivers lag
  std::vector<spool::JoinHandle<Seen>> tasks;
  for (int i = 0; i < 2; ++i) tasks.push_back(rt.spawn(receive_task(tx.subscribe())));
  Seen by_block_on, by_canceller;
  std::vector<std::thread> threads;
  threads.emplace_back([rx = tx.subscribe(), &by_block_on]() mutable {
    for (;;) {
      auto r = spool::block_on(rx.recv());
      if (!by_block_on.add(r)) break;
    }
  });
  // Polls each receive once and drops it if it would wait (a cancelled wait must lose
  // nothing), then waits for the next one under block_on.
  threads.emplace_back([rx = tx.subscribe(), &by_canceller]() mutable {
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    for (;;) {
      {
        auto first = rx.recv();
        auto p = first.poll(cx);
        if (p.is_ready()) {
          if (!by_canceller.add(p.value())) break;
          continue;
        }
      }
      auto r = spool::block_on(rx.recv());
      if (!by_canceller.add(r)) break;
    }
  });
  { auto unused = std::move(rx); }
  // Churn: receivers that subscribe, read a little and go away while messages are in
  // flight (each drop releases its unread messages; ASan and TSan check the slots).
  // Relaxed: a stop flag; the loop reads no data through it.
  std::atomic<bool> producers_done{false};
  threads.emplace_back([tx = tx, &producers_done] {
    while (!producers_done.load(std::memory_order_relaxed)) {
      auto r = tx.subscribe();
      auto copy = r;
      (void)r.try_recv();
      (void)copy.try_recv();
      std::this_thread::yield();
    }
  });
  std::vector<spool::JoinHandle<void>> producers;
  for (std::uint64_t p = 0; p < 2; ++p) producers.push_back(rt.spawn(send_task(tx, &live, p)));
  std::vector<std::thread> producer_threads;
  for (std::uint64_t p = 2; p < kProducers; ++p) {
    producer_threads.emplace_back([tx = tx, &live, p] {
      for (std::uint64_t i = 1; i <= kSends; ++i) {
        EXPECT_TRUE(tx.send(Payload(live, message(p, i))));
        if (i % 16 == 0) std::this_thread::yield();  // let the receivers in (often, not always)
      }
    });
  }
  for (auto& t : producer_threads) t.join();
  for (auto& p : producers) spool::block_on(std::move(p));
  producers_done.store(true, std::memory_order_relaxed);
  { auto gone = std::move(tx); }  // the churn thread's copy is the last sender
  for (auto& t : threads) t.join();
  for (auto& t : tasks) expect_all_accounted(spool::block_on(std::move(t)));
  expect_all_accounted(by_block_on);
  expect_all_accounted(by_canceller);
}

TEST(BroadcastStress, TasksAndThreadsWithLagCancellationAndChurn) {
  // Messages alive (see CheckedPayload): none once the runtime and the channel are gone.
  std::atomic<std::int64_t> live{0};
  tasks_and_threads_with_lag_cancellation_and_churn(live);
  EXPECT_EQ(live.load(std::memory_order_relaxed), 0);
}

}  // namespace
}  // namespace broadcast_stress_test
