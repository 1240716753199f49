// RootWaker (src/runtime/root_waker.hpp): wait() returns only after a wake, whether the wake
// came before it, while it spins, or once it parked, and it loses none. Synchronisation is by
// the waker itself and join(): no sleeps, no timing thresholds.
#include "runtime/root_waker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace {

using spool::detail::RootWaker;

TEST(RootWakerTest, AWakeBeforeTheWaitMakesItReturnAtOnce) {
  RootWaker root;
  root.wake();
  root.wait(nullptr);  // would block forever without the wake
  EXPECT_FALSE(root.woken.load());
}

TEST(RootWakerTest, AWaitAfterAWakeThatFoundItUnparkedWaitsForTheNextWake) {
  RootWaker root;
  root.wake();         // leaves the parker's token: nobody was parked
  root.wait(nullptr);  // consumes the wake, not the token
  // Written by `waker` before its wake (seq_cst), read after the wait returned.
  std::atomic<bool> second_sent{false};
  std::thread waker([&] {
    second_sent.store(true);
    root.wake();
  });
  root.wait(nullptr);  // the stale token must not end this wait by itself
  EXPECT_TRUE(second_sent.load());
  waker.join();
}

TEST(RootWakerTest, PingPongNeitherReturnsEarlyNorLosesAWake) {
  // Each side waits until the other wakes it: wakes land before the wait, while it spins
  // and after it parked. A lost wake hangs (CTest's timeout); an early return is counted.
  constexpr int kRounds = 20'000;
  RootWaker ping;
  RootWaker pong;
  // Wakes sent to each side: stored (seq_cst) before the wake, read after the wait.
  std::atomic<int> sent_to_ping{0};
  std::atomic<int> sent_to_pong{0};
  int other_early = 0;  // written by `other` only, read after join()
  std::thread other([&] {
    for (int i = 1; i <= kRounds; ++i) {
      ping.wait(nullptr);
      if (sent_to_ping.load() < i) ++other_early;
      sent_to_pong.store(i);
      pong.wake();
    }
  });
  int early = 0;
  for (int i = 1; i <= kRounds; ++i) {
    sent_to_ping.store(i);
    ping.wake();
    pong.wait(nullptr);
    if (sent_to_pong.load() < i) ++early;
  }
  other.join();
  EXPECT_EQ(early, 0);
  EXPECT_EQ(other_early, 0);
}

}  // namespace
