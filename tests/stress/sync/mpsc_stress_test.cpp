// Stress (run under TSan): mpsc channels fed by tasks on a multi-thread runtime and by
// outside threads, with sends cancelled while they wait for room, drained by one task; the
// invariants are the exact count and sum of what arrived. Then receivers dropped while
// senders race them: every value is destroyed exactly once and no sender hangs.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "spool/sync/mpsc.hpp"

namespace mpsc_stress_test {
namespace {

constexpr std::uint64_t kTasks = 4;
constexpr std::uint64_t kTaskSends = 200'000;
constexpr std::uint64_t kThreads = 2;
constexpr std::uint64_t kThreadSends = 100'000;
constexpr std::uint64_t kCancelRounds = 50'000;
// Bounded: 4 x 200,000 + 2 x 100,000 = 10^6 sends, plus up to 50,000 from the canceller,
// as many receives.
constexpr std::uint64_t kUnboundedSends = 166'667;
// Unbounded: (4 tasks + 2 threads) x 166,667 = 1,000,002 sends, as many receives.

struct Totals {
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
};

spool::Task<void> send_range(spool::mpsc::Sender<std::uint64_t> tx, std::uint64_t n) {
  for (std::uint64_t i = 1; i <= n; ++i) EXPECT_TRUE(co_await tx.send(i));
}

spool::Task<Totals> receive_all(spool::mpsc::Receiver<std::uint64_t> rx) {
  Totals t;
  while (auto v = co_await rx.recv()) {
    ++t.count;
    t.sum += *v;
  }
  co_return t;
}

TEST(MpscStress, BoundedTasksThreadsAndCancelledSends) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto [tx, rx] = spool::mpsc::channel<std::uint64_t>(8);  // small: senders often wait
  auto receiver = rt.spawn(receive_all(std::move(rx)));
  for (std::uint64_t i = 0; i < kTasks; ++i) (void)rt.spawn(send_range(tx, kTaskSends));
  std::vector<std::thread> threads;
  for (std::uint64_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([tx = tx] {
      for (std::uint64_t i = 1; i <= kThreadSends; ++i) EXPECT_TRUE(spool::block_on(tx.send(i)));
    });
  }
  // Polls a send once and drops it: sent (ready), or cancelled while it waited for room
  // (possibly after the room was handed to it: the room must pass on, the value must not
  // arrive).
  std::uint64_t cancel_side_count = 0, cancel_side_sum = 0;
  threads.emplace_back([tx = tx, &cancel_side_count, &cancel_side_sum] {
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    for (std::uint64_t i = 1; i <= kCancelRounds; ++i) {
      auto send = tx.send(i);
      if (send.poll(cx).is_ready()) {
        ++cancel_side_count;
        cancel_side_sum += i;
      }
    }
  });
  { auto gone = std::move(tx); }
  for (auto& t : threads) t.join();
  const Totals got = spool::block_on(std::move(receiver));
  const auto triangle = [](std::uint64_t n) { return n * (n + 1) / 2; };
  EXPECT_EQ(got.count, kTasks * kTaskSends + kThreads * kThreadSends + cancel_side_count);
  EXPECT_EQ(got.sum,
            kTasks * triangle(kTaskSends) + kThreads * triangle(kThreadSends) + cancel_side_sum);
}

TEST(MpscStress, UnboundedTasksAndThreads) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto [tx, rx] = spool::mpsc::unbounded_channel<std::uint64_t>();
  auto receiver = rt.spawn(receive_all(std::move(rx)));
  struct Body {
    static spool::Task<void> run(spool::mpsc::UnboundedSender<std::uint64_t> tx) {
      for (std::uint64_t i = 1; i <= kUnboundedSends; ++i) {
        EXPECT_TRUE(tx.send(i));
        if (i % 64 == 0) co_await spool::yield_now();
      }
    }
  };
  for (std::uint64_t i = 0; i < kTasks; ++i) (void)rt.spawn(Body::run(tx));
  std::vector<std::thread> threads;
  for (std::uint64_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([tx = tx] {
      for (std::uint64_t i = 1; i <= kUnboundedSends; ++i) EXPECT_TRUE(tx.send(i));
    });
  }
  { auto gone = std::move(tx); }
  for (auto& t : threads) t.join();
  const Totals got = spool::block_on(std::move(receiver));
  EXPECT_EQ(got.count, (kTasks + kThreads) * kUnboundedSends);
  EXPECT_EQ(got.sum, (kTasks + kThreads) * (kUnboundedSends * (kUnboundedSends + 1) / 2));
}

// A value that counts its live instances, to check that each is destroyed exactly once
// whether it was received, refused, or still queued when the receiver went away.
struct Tracked {
  static inline std::atomic<std::int64_t> live{0};  // relaxed: only the final total matters
  Tracked() { live.fetch_add(1, std::memory_order_relaxed); }
  Tracked(Tracked&&) noexcept { live.fetch_add(1, std::memory_order_relaxed); }
  Tracked(const Tracked&) = delete;
  ~Tracked() { live.fetch_sub(1, std::memory_order_relaxed); }
};

TEST(MpscStress, ReceiversDroppedWhileSendersRace) {
  constexpr int kRounds = 300;
  for (int round = 0; round < kRounds; ++round) {
    auto [tx, rx] = spool::mpsc::channel<Tracked>(2);
    std::vector<std::thread> senders;
    for (int s = 0; s < 2; ++s) {
      senders.emplace_back([tx = tx] {
        // Until refused: each send either queues or, once the receiver is gone, returns
        // false — including a send that was waiting for room when it went.
        while (spool::block_on(tx.send(Tracked()))) {
        }
      });
    }
    { auto gone = std::move(tx); }
    for (int i = 0; i < round % 7; ++i) (void)spool::block_on(rx.recv());
    { auto gone = std::move(rx); }
    for (auto& t : senders) t.join();
    ASSERT_EQ(Tracked::live.load(std::memory_order_relaxed), 0) << "round " << round;
  }
}

}  // namespace
}  // namespace mpsc_stress_test
