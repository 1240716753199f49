// ThreadParker (src/driver/thread_parker.hpp) on its condition variable (no reactor hook).
// Synchronisation is by the parker itself and join(): no sleeps, no timing thresholds.
#include "driver/thread_parker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace {

using spool::detail::ThreadParker;

TEST(ThreadParkerTest, AnUnparkBeforeTheParkMakesItReturnAtOnce) {
  ThreadParker parker;
  parker.unpark();
  parker.park_in(nullptr);  // consumes the token; would block forever without it
  parker.unpark();
  parker.unpark();          // tokens do not add up...
  parker.park_in(nullptr);  // ...but one is there
  SUCCEED();
}

TEST(ThreadParkerTest, AnUnparkFromAnotherThreadWakesTheParkedThread) {
  ThreadParker parker;
  // Written by the owner after its park returned (seq_cst store), read after join().
  std::atomic<bool> woke{false};
  std::thread owner([&] {
    parker.park_in(nullptr);
    woke.store(true);
  });
  parker.unpark();  // before or after the owner blocks: the token is sticky
  owner.join();
  EXPECT_TRUE(woke.load());
}

TEST(ThreadParkerTest, PingPongBetweenTwoParkedThreadsNeverLosesAWakeUp) {
  // Each side parks until the other unparks it: most rounds unpark a blocked thread, some
  // race with the park. A lost wake-up would hang (and time out under CTest).
  constexpr int kRounds = 2000;
  ThreadParker ping;
  ThreadParker pong;
  int other_rounds = 0;  // written by `other` only, read after join()
  std::thread other([&] {
    for (int i = 0; i < kRounds; ++i) {
      ping.park_in(nullptr);
      pong.unpark();
      ++other_rounds;
    }
  });
  int rounds = 0;
  for (int i = 0; i < kRounds; ++i) {
    ping.unpark();
    pong.park_in(nullptr);
    ++rounds;
  }
  other.join();
  EXPECT_EQ(rounds, kRounds);
  EXPECT_EQ(other_rounds, kRounds);
}

}  // namespace
