// Every cooperative point is a cancellation point: a CPU-bound task that awaits only
// yield_if_requested() or consume_budget() stops at its next such await once aborted or once
// its runtime shuts down; and a shutdown that gives up on a thread stuck in a poll says so.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_gate.hpp"

// The tests' atomics (escape, drops, flags) are seq_cst, the default: each is read after a
// join, a gate or a guard's wait, which orders it after its writes.
namespace {

using spool::Task;
using spool_rt_test::DropCounter;
using spool_rt_test::Gate;

// Generous: reached only when the behaviour under test is broken (the test then fails
// instead of hanging). Never a measure of speed.
constexpr auto kHangGuard = std::chrono::seconds(60);

// A gate the test's guard can stop waiting for.
class TimedGate {
 public:
  void open() { promise_.set_value(); }
  bool wait_for(std::chrono::seconds d) const {
    return opened_.wait_for(d) == std::future_status::ready;
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_ = promise_.get_future().share();
};

// Which cooperative point the loop awaits.
enum class Point { kYieldIfRequested, kConsumeBudget };

// A loop that awaits only `point`. `handle` (filled before `go` opens) lets it abort
// itself at iteration `abort_at`; it counts the iterations that ran after that abort.
struct SelfAbort {
  std::optional<spool::JoinHandle<void>> handle;
  Gate go;
  std::int64_t after_abort = -1;
};

// Far more than a poll's budget; bounds the loop only if the cancel is never seen.
constexpr std::int64_t kMaxIterations = 100'000;

Task<void> self_aborting_loop(Point point, SelfAbort* s, DropCounter) {
  s->go.wait();
  for (std::int64_t i = 0; i < kMaxIterations; ++i) {
    if (i == 10) {
      s->handle->abort();  // from this very poll: the next cooperative point must see it
      s->after_abort = 0;
    } else if (s->after_abort >= 0) {
      ++s->after_abort;
    }
    if (point == Point::kYieldIfRequested) {
      co_await spool::yield_if_requested();
    } else {
      co_await spool::consume_budget();
    }
  }
}

class CancelCpuLoopAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(CancelCpuLoopAnyFlavor);

void expect_cancelled_at_next_point(spool::Runtime& rt, Point point) {
  std::atomic<std::int64_t> drops{0};
  SelfAbort s;
  s.handle.emplace(rt.spawn(self_aborting_loop(point, &s, DropCounter(drops))));
  s.go.open();
  try {
    rt.block_on(std::move(*s.handle));
    ADD_FAILURE() << "the loop ended without being cancelled";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled()) << e.what();
  }
  EXPECT_EQ(s.after_abort, 0) << "the loop ran on after its abort";
  EXPECT_EQ(drops.load(), 1);  // the frame was destroyed
}

TEST_P(CancelCpuLoopAnyFlavor, YieldIfRequestedIsACancellationPoint) {
  auto rt = build();
  expect_cancelled_at_next_point(rt, Point::kYieldIfRequested);
}

TEST_P(CancelCpuLoopAnyFlavor, ConsumeBudgetSeesACancelAtOnce) {
  auto rt = build();
  expect_cancelled_at_next_point(rt, Point::kConsumeBudget);
}

// The loop of docs/levels.md for CPU-bound code, aborted from another thread; `escape`
// ends it only if the cancel never arrives (the test then fails instead of hanging).
Task<void> cpu_loop(Gate* started, const std::atomic<bool>* escape, DropCounter) {
  started->open();
  while (!escape->load(std::memory_order_relaxed)) co_await spool::yield_if_requested();
}

TEST(CancelCpuLoop, AbortFromAnotherThreadStopsIt) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  std::atomic<std::int64_t> drops{0};
  std::atomic<bool> escape{false};
  Gate started;
  auto handle = rt.spawn(cpu_loop(&started, &escape, DropCounter(drops)));
  started.wait();
  handle.abort();
  TimedGate joined;
  std::thread guard([&] {
    if (!joined.wait_for(kHangGuard)) escape.store(true);
  });
  try {
    rt.block_on(std::move(handle));
    ADD_FAILURE() << "abort never took effect: the loop ran until the test's guard ended it";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled()) << e.what();
  }
  joined.open();
  guard.join();
  EXPECT_EQ(drops.load(), 1);
}

TEST(CancelCpuLoop, ShutdownStopsItAndReportsACleanShutdown) {
  std::atomic<std::int64_t> drops{0};
  std::atomic<bool> escape{false};
  Gate started;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  { auto detached = rt.spawn(cpu_loop(&started, &escape, DropCounter(drops))); }
  started.wait();
  const spool::ShutdownReport report = rt.shutdown_timeout(kHangGuard);
  escape.store(true);  // (only needed if the shutdown gave up on the loop)
  EXPECT_TRUE(report.clean()) << report.left_in_poll;
  EXPECT_EQ(report.threads_left_in_poll, 0u);
  EXPECT_EQ(drops.load(), 1);
}

TEST(CancelCpuLoop, TheRuntimesDestructorStopsIt) {
  std::atomic<std::int64_t> drops{0};
  std::atomic<bool> escape{false};
  Gate started;
  TimedGate destroyed;
  std::thread guard([&] {
    if (!destroyed.wait_for(kHangGuard)) escape.store(true);
  });
  {
    auto rt = spool::Builder::multi_thread().worker_threads(1).build();
    { auto detached = rt.spawn(cpu_loop(&started, &escape, DropCounter(drops))); }
    started.wait();
  }
  const bool guard_fired = escape.load();
  destroyed.open();
  guard.join();
  EXPECT_FALSE(guard_fired) << "the destructor waited until the test's guard ended the loop";
  EXPECT_EQ(drops.load(), 1);
}

// The loop of docs/levels.md raced against a timer (armed first): the other worker fires it
// while this one computes and wakes the task mid-poll; yield_if_requested yields for that
// wake, so the select sees the timer and drops the loop.
TEST(CancelCpuLoop, ATimerSelectedAgainstTheLoopFiresWhileItComputes) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::atomic<bool> escape{false};
  std::atomic<bool> loop_finished{false};
  std::atomic<std::int64_t> drops{0};
  Gate started;
  TimedGate done;
  // Waited for on this plain thread, not in block_on: only the workers drive the timers.
  (void)rt
      .spawn([](Gate* s, const std::atomic<bool>* e, std::atomic<std::int64_t>* d,
                std::atomic<bool>* finished, TimedGate* over) -> Task<void> {
        auto r = co_await spool::select(spool::sleep(std::chrono::milliseconds(1)),
                                        cpu_loop(s, e, DropCounter(*d)));
        finished->store(r.index() == 1);
        over->open();
      }(&started, &escape, &drops, &loop_finished, &done))
      .detach();
  if (!done.wait_for(kHangGuard)) {
    escape.store(true);
    done.wait_for(kHangGuard);
  }
  EXPECT_FALSE(loop_finished.load()) << "the loop ran until the test's guard ended it";
  EXPECT_EQ(drops.load(), 1);  // the select destroyed the loop
}

// A loop that never reaches a cooperative point cannot be stopped: the shutdown gives up on
// its thread at the deadline and names the task in its report.
Task<void> spin_without_awaiting(Gate* started, const std::atomic<bool>* release) {
  started->open();
  while (!release->load()) std::this_thread::yield();
  co_return;
}

TEST(CancelCpuLoop, AShutdownThatLeavesAThreadInAPollSaysWhichTask) {
  spool_rt_test::RuntimeFreed freed;
  std::atomic<bool> release{false};
  Gate started;
  spool::ShutdownReport report;
  {
    auto rt = spool::Builder::multi_thread()
                  .worker_threads(2)
                  .levels({spool::Level{"crunch"}})
                  .on_thread_start(freed.probe())
                  .build();
    { auto stuck = rt.spawn(spin_without_awaiting(&started, &release)); }
    started.wait();
    report = rt.shutdown_timeout(std::chrono::milliseconds(0));  // gives up at once
  }
  EXPECT_FALSE(report.clean());
  EXPECT_TRUE(report.drained);  // no complete-on-close channel: nothing to drain
  EXPECT_EQ(report.threads_left_in_poll, 1u);
  EXPECT_NE(report.left_in_poll.find("[crunch]: running"), std::string::npos)
      << report.left_in_poll;
  EXPECT_NE(report.left_in_poll.find("task "), std::string::npos) << report.left_in_poll;
  release.store(true);
  freed.wait();  // the thread left its poll and the runtime was freed: nothing leaks
}

}  // namespace
