// Stress (run under TSan): the paused clock of a current-thread runtime while threads that
// know nothing of its tasks wait for its timers — a thread's spool::block_on and the
// driver's background thread — and this thread's block_on calls begin and end again and
// again. Time may jump between the block_on calls (nothing runs the runtime then), never
// during one that does not park: a root that only yields must see the clock stand still.
// Roots that sleep make the runtime's thread park, often while an outside thread holds the
// driver (a lost hand-over would hang).
// Bounded by counts, not time.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_sanitizer.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Task;
using spool_rt_test::scaled;

// Sleeps of the runtime, one second apart (made inside it: they are its timers).
Task<std::vector<std::unique_ptr<spool::Sleep>>> make_sleeps(int n) {
  std::vector<std::unique_ptr<spool::Sleep>> v;
  for (int i = 1; i <= n; ++i) {
    v.push_back(std::make_unique<spool::Sleep>(spool::sleep(std::chrono::seconds(i))));
  }
  co_return v;
}

// Yields `n` times (so its block_on never parks) and counts how often the clock moved.
Task<int> clock_moves_while_yielding(int n) {
  int moves = 0;
  spool::Instant last = spool::time::now();
  for (int i = 0; i < n; ++i) {
    co_await spool::yield_now();
    const spool::Instant now = spool::time::now();
    moves += now != last;
    last = now;
  }
  co_return moves;
}

TEST(PausedClockStress, TheClockStandsStillWhileABlockOnRunsThoughOutsideThreadsWait) {
  constexpr int kSleeps = scaled(3000, 600);
  constexpr int kRoots = scaled(20000, 3000);
  auto rt = spool_time_test::paused_runtime();
  // The background thread: a foreign executor (no reactor slot) awaits one of the timers.
  std::unique_ptr<spool::Sleep> background = std::move(rt.block_on(make_sleeps(1)).front());
  int pending = 0;
  spool_time_test::run_foreign(*background, nullptr, &pending);
  std::vector<std::unique_ptr<spool::Sleep>> sleeps = rt.block_on(make_sleeps(kSleeps));
  std::thread outside([&sleeps] {
    for (auto& s : sleeps) spool::block_on(*s);
  });
  int moves = 0;
  for (int i = 0; i < kRoots; ++i) {
    // Every tenth root sleeps: the runtime's idle thread parks (in the driver, or on its own
    // parker while an outside thread holds the driver, which must hand it back) and moves
    // the clock itself.
    if (i % 10 == 0) rt.block_on([]() -> Task<void> { co_await spool::sleep(1ms); }());
    moves += rt.block_on(clock_moves_while_yielding(20));
  }
  outside.join();  // its last timers fire while nothing runs the runtime
  EXPECT_EQ(moves, 0) << "the clock jumped while a block_on ran tasks without parking";
  for (const auto& s : sleeps) EXPECT_TRUE(s->is_elapsed());
  EXPECT_EQ(rt.metrics().timers_fired, static_cast<std::uint64_t>(kSleeps + 1 + kRoots / 10));
}

}  // namespace
