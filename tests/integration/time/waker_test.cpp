// Which waker a Sleep wakes: the one of its latest pending poll. A Sleep polled again with
// another waker (a select moved between tasks, a foreign executor) gives up the old waker
// and is woken through the new one only; polled again with the same one, it keeps it. On
// the paused clock: the timer fires exactly when the test advances time.
#include <gtest/gtest.h>

#include <chrono>

#include "spool/spool.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Task;
using spool_time_test::paused_runtime;

// A task for wakers that count: its wakes and the wakers alive for it (the runtime's one
// thread clones, wakes and drops them: no atomics).
struct Counted {
  int wakes = 0;
  int refs = 0;
  spool::Waker waker() {
    ++refs;
    return spool::Waker::from_raw({this, &kVTable});
  }

  static Counted& of(const void* p) { return *static_cast<Counted*>(const_cast<void*>(p)); }
  static spool::RawWaker clone(const void* p) {
    ++of(p).refs;
    return {p, &kVTable};
  }
  static void wake_by_ref(const void* p) { ++of(p).wakes; }
  static void drop(const void* p) { --of(p).refs; }
  static void wake(const void* p) {
    wake_by_ref(p);
    drop(p);
  }
  static constexpr spool::WakerVTable kVTable{&clone, &wake, &wake_by_ref, &drop};
};

// Polls `*sleep` once with `*waker` and the awaiting task's reactor slot; ready at once with
// whether that poll was ready.
class PollWith {
 public:
  PollWith(spool::Sleep& sleep, const spool::Waker& waker) : sleep_(&sleep), waker_(&waker) {}
  spool::Poll<bool> poll(spool::Context& cx) {
    spool::Context with(*waker_, cx);
    return spool::Poll<bool>::ready(sleep_->poll(with).is_ready());
  }

 private:
  spool::Sleep* sleep_;
  const spool::Waker* waker_;
};

Task<void> latest_waker_is_woken() {
  Counted first;
  Counted second;
  {
    const spool::Waker a = first.waker();
    const spool::Waker b = second.waker();
    auto sleep = spool::sleep(10ms);
    EXPECT_FALSE(co_await PollWith(sleep, a));  // armed with a clone of a
    EXPECT_EQ(first.refs, 2);
    EXPECT_FALSE(co_await PollWith(sleep, b));  // armed: a's clone is swapped for b's
    EXPECT_EQ(first.refs, 1) << "the replaced waker was not dropped";
    EXPECT_EQ(second.refs, 2);
    EXPECT_FALSE(co_await PollWith(sleep, b));  // the same task: nothing cloned
    EXPECT_EQ(second.refs, 2);
    co_await spool::time::advance(10ms);
    EXPECT_EQ(first.wakes, 0);
    EXPECT_EQ(second.wakes, 1);
    EXPECT_EQ(second.refs, 1) << "the fired timer kept its waker";
    // Fired: ready with any waker, which it does not keep.
    EXPECT_TRUE(co_await PollWith(sleep, a));
    EXPECT_EQ(first.refs, 1);
  }
  EXPECT_EQ(first.refs, 0);
  EXPECT_EQ(second.refs, 0);
}

TEST(SleepWaker, TheLatestPollsWakerIsWokenAndTheReplacedOneDropped) {
  auto rt = paused_runtime();
  rt.block_on(latest_waker_is_woken());
}

// A Sleep reset to a deadline that has passed is due at once: it wakes its waker then (the
// driver will not), and keeps none.
Task<void> reset_to_the_past_wakes_now() {
  Counted task;
  const spool::Waker w = task.waker();
  auto sleep = spool::sleep(1h);
  EXPECT_FALSE(co_await PollWith(sleep, w));
  sleep.reset(spool::time::now() - 1ms);
  EXPECT_EQ(task.wakes, 1);
  EXPECT_EQ(task.refs, 1);
  EXPECT_TRUE(co_await PollWith(sleep, w));
}

TEST(SleepWaker, AResetToThePastWakesAtOnce) {
  auto rt = paused_runtime();
  rt.block_on(reset_to_the_past_wakes_now());
}

}  // namespace
