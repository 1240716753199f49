// spool::interval on the paused clock, tick by tick: the first tick at once, then one per
// period; a tick taken late (the clock advanced 3.5 periods) under each MissedTickBehavior;
// Interval::reset; and the period's validation.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Instant;
using spool::MissedTickBehavior;
using spool::Task;
using spool_time_test::metrics;
using spool_time_test::paused_runtime;

using ms = std::chrono::milliseconds;

// One tick: the instant it gives (its schedule) and the clock when it completed, both as
// offsets from the start.
struct Tick {
  ms scheduled;
  ms now;
  bool operator==(const Tick&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Tick& t) {
  return os << "{scheduled " << t.scheduled.count() << " ms, now " << t.now.count() << " ms}";
}

Task<Tick> take_tick(spool::Interval* iv, Instant start) {
  const Instant scheduled = co_await iv->tick();
  co_return Tick{std::chrono::duration_cast<ms>(scheduled - start),
                 std::chrono::duration_cast<ms>(spool::time::now() - start)};
}

// Ticks once, advances the clock by `late`, then takes `more` ticks.
Task<std::vector<Tick>> ticks_with_gap(MissedTickBehavior behavior, std::chrono::nanoseconds late,
                                       int more) {
  const Instant start = spool::time::now();
  auto iv = spool::interval(10ms);
  EXPECT_EQ(iv.missed_tick_behavior(), MissedTickBehavior::kBurst);  // the default
  iv.set_missed_tick_behavior(behavior);
  std::vector<Tick> out;
  out.push_back(co_await take_tick(&iv, start));
  co_await spool::time::advance(late);
  for (int i = 0; i < more; ++i) out.push_back(co_await take_tick(&iv, start));
  co_return out;
}

std::vector<Tick> run_ticks(MissedTickBehavior behavior, std::chrono::nanoseconds late, int more) {
  auto rt = paused_runtime();
  return rt.block_on(ticks_with_gap(behavior, late, more));
}

// 35 ms late (3.5 periods): the ticks due at 10, 20 and 30 ms were missed.
TEST(Interval, BurstCatchesUpAtOnceThenKeepsTheSchedule) {
  EXPECT_EQ(run_ticks(MissedTickBehavior::kBurst, 35ms, 5), (std::vector<Tick>{{ms(0), ms(0)},
                                                                               {ms(10), ms(35)},
                                                                               {ms(20), ms(35)},
                                                                               {ms(30), ms(35)},
                                                                               {ms(40), ms(40)},
                                                                               {ms(50), ms(50)}}));
}

TEST(Interval, DelayShiftsTheScheduleToAPeriodAfterTheLateTick) {
  EXPECT_EQ(
      run_ticks(MissedTickBehavior::kDelay, 35ms, 4),
      (std::vector<Tick>{
          {ms(0), ms(0)}, {ms(10), ms(35)}, {ms(45), ms(45)}, {ms(55), ms(55)}, {ms(65), ms(65)}}));
}

TEST(Interval, SkipDropsTheMissedTicksAndKeepsTheGrid) {
  EXPECT_EQ(
      run_ticks(MissedTickBehavior::kSkip, 35ms, 4),
      (std::vector<Tick>{
          {ms(0), ms(0)}, {ms(10), ms(35)}, {ms(40), ms(40)}, {ms(50), ms(50)}, {ms(60), ms(60)}}));
}

// Late by less than a period: no tick was missed, every behaviour keeps the schedule.
TEST(Interval, LateButNotMissedKeepsTheScheduleForEveryBehavior) {
  for (auto b :
       {MissedTickBehavior::kBurst, MissedTickBehavior::kDelay, MissedTickBehavior::kSkip}) {
    EXPECT_EQ(
        run_ticks(b, 15ms, 3),
        (std::vector<Tick>{{ms(0), ms(0)}, {ms(10), ms(15)}, {ms(20), ms(20)}, {ms(30), ms(30)}}))
        << "behaviour " << static_cast<int>(b);
  }
}

// The first tick completes at once, without a timer; the next ones need one each.
Task<void> first_tick_at_once() {
  const Instant start = spool::time::now();
  auto iv = spool::interval(10ms);
  EXPECT_EQ(iv.period(), 10ms);
  const Instant first = co_await iv.tick();
  EXPECT_EQ(first - start, 0ms);
  EXPECT_EQ(spool::time::now() - start, 0ms);
  EXPECT_EQ(metrics().timers_armed, 0u);
  const Instant second = co_await iv.tick();
  EXPECT_EQ(second - start, 10ms);
  // The second tick's timer, armed at its first poll; and the third's, armed at once when
  // the second was taken (its Sleep had been polled: a reset re-arms it in place).
  EXPECT_EQ(metrics().timers_armed, 2u);
  EXPECT_EQ(metrics().timers_fired, 1u);
}

TEST(Interval, FirstTickCompletesAtOnce) {
  auto rt = paused_runtime();
  rt.block_on(first_tick_at_once());
}

// interval_at: the first tick at the start given; reset: the next one period from now.
Task<void> interval_at_and_reset() {
  const Instant start = spool::time::now();
  auto iv = spool::interval_at(start + 5ms, 10ms);
  EXPECT_EQ(co_await iv.tick() - start, 5ms);
  EXPECT_EQ(spool::time::now() - start, 5ms);
  co_await spool::time::advance(3ms);
  iv.reset();  // from 8 ms: the next tick at 18 ms, not 15
  EXPECT_EQ(co_await iv.tick() - start, 18ms);
  EXPECT_EQ(spool::time::now() - start, 18ms);
  EXPECT_EQ(co_await iv.tick() - start, 28ms);
}

TEST(Interval, IntervalAtAndReset) {
  auto rt = paused_runtime();
  rt.block_on(interval_at_and_reset());
}

// An interval that started long before the clock's epoch (here Instant::min(), billions of
// periods ago): its missed ticks are handled as any others, with no overflow.
Task<void> interval_from_the_clocks_start(MissedTickBehavior behavior) {
  auto iv = spool::interval_at(Instant::min(), 1h);
  iv.set_missed_tick_behavior(behavior);
  EXPECT_EQ(co_await iv.tick(), Instant::min());  // due: at once
  const Instant now = spool::time::now();
  const Instant second = co_await iv.tick();
  switch (behavior) {
    case MissedTickBehavior::kBurst:
      EXPECT_EQ(second, Instant::min() + 1h);  // the schedule, however far behind
      break;
    case MissedTickBehavior::kDelay:
      EXPECT_EQ(second, now + 1h);
      break;
    case MissedTickBehavior::kSkip:
      EXPECT_GT(second, now);  // the next tick of the grid after now
      EXPECT_LE(second, now + 1h);
      break;
  }
  EXPECT_EQ(co_await iv.tick(), second + 1h);
}

TEST(Interval, AStartLongBeforeTheClocksEpochTicksForEveryBehavior) {
  for (auto b :
       {MissedTickBehavior::kBurst, MissedTickBehavior::kDelay, MissedTickBehavior::kSkip}) {
    auto rt = paused_runtime();
    rt.block_on(interval_from_the_clocks_start(b));
  }
}

TEST(Interval, NonPositivePeriodThrows) {
  EXPECT_THROW((void)spool::interval(0ms), std::invalid_argument);
  EXPECT_THROW((void)spool::interval(-1ms), std::invalid_argument);
  EXPECT_THROW((void)spool::interval_at(spool::time::now(), 0ms), std::invalid_argument);
  auto rt = paused_runtime();
  rt.block_on([]() -> Task<void> {
    EXPECT_THROW((void)spool::interval(0ms), std::invalid_argument);
    co_return;
  }());
}

}  // namespace
