// The task state machine seen from a leaf: a wake that arrives while the task is being
// polled causes exactly one more poll (however many wakes arrive), and a wake after the
// task completed does nothing (and is memory-safe even after the runtime is gone).
//
// "Exactly one more" needs a quiet point: the leaf spawns a probe task from inside its
// last pending poll. Run queues are FIFO here (a current-thread runtime, or one worker
// without the LIFO slot), so when the probe runs, every run-queue entry made for the task
// before it has been processed; the poll count must then be final.
//
// The promises both flavours make are parameterised (WakeAnyFlavor.<test>/MultiThread and
// .../CurrentThread); those that count polls across the whole runtime stay current-thread.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Task;
using spool_rt_test::ManualLeaf;

Task<int> await_leaf_then(ManualLeaf leaf, int v) {
  co_await leaf;
  co_return v;
}

Task<void> send_unit(spool::oneshot::Sender<int> tx) {
  tx.send(0);
  co_return;
}

// Wakes its own waker `wakes_per_poll` times during each of its first `self_waking_polls`
// polls and returns pending; at the next poll it spawns the probe, then waits on `release`.
struct WakesItselfDuringPoll {
  int self_waking_polls;
  int wakes_per_poll;
  std::atomic<int>* polls;
  std::optional<spool::oneshot::Sender<int>> probe_tx;
  ManualLeaf release;

  spool::Poll<void> poll(spool::Context& cx) {
    int n = polls->fetch_add(1) + 1;
    if (n <= self_waking_polls) {
      for (int i = 0; i < wakes_per_poll; ++i) cx.waker().wake_by_ref();
      spool::Waker clone = cx.waker();
      std::move(clone).wake();  // the consuming form too
      return spool::pending;
    }
    if (probe_tx) {
      spool::spawn(send_unit(std::move(*probe_tx))).id();
      probe_tx.reset();
    }
    return release.poll(cx);
  }
};

Task<void> await_self_waking(WakesItselfDuringPoll leaf) { co_await leaf; }

// Spawns the self-waking task, waits for the probe, checks the count, then releases it.
struct Scenario {
  int self_waking_polls;
  int wakes_per_poll;
  std::atomic<int> polls{0};
  int polls_at_probe = -1;

  Task<void> run() {
    auto [tx, rx] = spool::oneshot::channel<int>();
    ManualLeaf release;
    auto h = spool::spawn(await_self_waking(
        WakesItselfDuringPoll{self_waking_polls, wakes_per_poll, &polls, std::move(tx), release}));
    co_await rx;
    polls_at_probe = polls.load();
    release.fire();
    co_await h;
  }
};

class WakeAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  // FIFO run queues (see the top of the file): one worker without the LIFO slot.
  spool::Runtime build_fifo() const {
    spool::Builder b = builder(1);
    if (is_multi_thread()) b.lifo_slot(false);
    return b.build();
  }
};
SPOOL_RT_INSTANTIATE_FLAVORS(WakeAnyFlavor);

TEST_P(WakeAnyFlavor, DuringPollCausesExactlyOneMorePoll) {
  auto rt = build_fifo();
  Scenario s{8, 4};
  auto h = rt.spawn(s.run());
  wait(rt, h);
  EXPECT_EQ(s.polls_at_probe, 9) << "8 self-waking polls, then exactly one more";
  EXPECT_EQ(s.polls.load(), 10) << "plus the one after release";
}

// The same with the self-waking task spawned by a current-thread block_on root (the root
// is polled by the driver loop but is not a task).
TEST(Wake, DuringPollCausesExactlyOneMorePollUnderACurrentThreadRoot) {
  auto rt = spool::Builder::current_thread().build();
  Scenario s{5, 3};
  rt.block_on(s.run());
  EXPECT_EQ(s.polls_at_probe, 6) << "5 self-waking polls, then exactly one more";
  EXPECT_EQ(s.polls.load(), 7) << "plus the one after release";
}

// The wakes come from another thread while the poll is in progress.
struct WokenFromOutsideDuringPoll {
  std::atomic<int>* polls;
  std::latch* in_first_poll;
  std::latch* woken;
  std::optional<spool::Waker>* shared_waker;
  std::optional<spool::oneshot::Sender<int>> probe_tx;
  ManualLeaf release;

  spool::Poll<void> poll(spool::Context& cx) {
    int n = polls->fetch_add(1) + 1;
    if (n == 1) {
      shared_waker->emplace(cx.waker());
      in_first_poll->count_down();
      woken->wait();  // the other thread wakes the task (several times) during this poll
      return spool::pending;
    }
    if (probe_tx) {
      spool::spawn(send_unit(std::move(*probe_tx))).id();
      probe_tx.reset();
    }
    return release.poll(cx);
  }
};

Task<void> await_woken_from_outside(WokenFromOutsideDuringPoll leaf) { co_await leaf; }

// On a current-thread runtime the poll blocks the driving thread itself (inside wait()).
TEST_P(WakeAnyFlavor, FromAnotherThreadDuringPollCausesExactlyOneMorePoll) {
  auto rt = build_fifo();
  std::atomic<int> polls{0};
  std::latch in_first_poll(1), woken(1);
  std::optional<spool::Waker> shared_waker;
  auto [tx, rx] = spool::oneshot::channel<int>();
  ManualLeaf release;
  auto h = rt.spawn(await_woken_from_outside(WokenFromOutsideDuringPoll{
      &polls, &in_first_poll, &woken, &shared_waker, std::move(tx), release}));
  std::thread waker_thread([&] {
    in_first_poll.wait();
    for (int i = 0; i < 10; ++i) shared_waker->wake_by_ref();
    woken.count_down();
  });
  wait(rt, rx);
  waker_thread.join();
  EXPECT_EQ(polls.load(), 2) << "ten wakes during one poll: exactly one more poll";
  release.fire();
  wait(rt, h);
  EXPECT_EQ(polls.load(), 3);
  shared_waker.reset();
}

// Pending once after saving a clone of its waker outside, then ready.
struct SavesWaker {
  std::optional<spool::Waker>* saved;
  std::atomic<int>* polls;
  spool::Poll<int> poll(spool::Context& cx) {
    if (polls->fetch_add(1) == 0) {
      saved->emplace(cx.waker());
      cx.waker().wake_by_ref();
      return spool::pending;
    }
    return 42;
  }
};

using spool_rt_test::value;

TEST(Wake, AfterCompletionIsANoOp) {
  auto rt = spool::Builder::current_thread().build();
  std::optional<spool::Waker> saved;
  std::atomic<int> polls{0};
  struct Root {
    static Task<int> run(std::optional<spool::Waker>* saved, std::atomic<int>* polls) {
      int v = co_await spool::spawn(SavesWaker{saved, polls});
      // The task is complete: wake it every way there is.
      saved->value().wake_by_ref();
      spool::Waker clone = saved->value();
      std::move(clone).wake();
      co_await spool::spawn(value(0));  // a probe behind anything that was queued
      co_return v;
    }
  };
  EXPECT_EQ(rt.block_on(Root::run(&saved, &polls)), 42);
  EXPECT_EQ(polls.load(), 2);
  // Three polls in all (the task twice, the probe once): the wakes queued nothing.
  EXPECT_EQ(rt.metrics().workers[0].polls, 3u);
  EXPECT_EQ(rt.metrics().live_tasks, 0u);
}

TEST_P(WakeAnyFlavor, AfterCompletionAndAfterTheRuntimeIsGoneIsSafe) {
  std::optional<spool::Waker> saved;
  std::atomic<int> polls{0};
  {
    auto rt = build();
    EXPECT_EQ(wait(rt, rt.spawn(SavesWaker{&saved, &polls})), 42);
  }
  ASSERT_TRUE(saved.has_value());
  // The waker keeps the finished task's memory alive; waking it touches nothing else.
  saved->wake_by_ref();
  spool::Waker clone = *saved;
  EXPECT_TRUE(clone.will_wake(*saved));
  std::move(clone).wake();
  saved.reset();  // the last reference: frees the task
  EXPECT_EQ(polls.load(), 2);
}

// Pending at its first poll, after saving its waker and saying so on `went_pending`.
struct PendingUntilWoken {
  std::optional<spool::Waker>* saved;
  std::optional<spool::oneshot::Sender<int>> went_pending;
  spool::Poll<int> poll(spool::Context& cx) {
    if (went_pending) {
      saved->emplace(cx.waker());
      std::exchange(went_pending, std::nullopt)->send(0);
      return spool::pending;
    }
    return 7;
  }
};

// On a worker, Waker::wake hands the Waker's reference to the queue entry of an idle task,
// and frees a completed task whose last reference it was (ASan's leak check sees a miss).
TEST(Wake, ByValueOnAWorkerRunsAnIdleTaskAndFreesACompletedOne) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  std::optional<spool::Waker> done_waker, idle_waker;
  std::atomic<int> polls{0};
  EXPECT_EQ(rt.block_on(rt.spawn(SavesWaker{&done_waker, &polls})), 42);
  auto [tx, rx] = spool::oneshot::channel<int>();
  auto idle = rt.spawn(PendingUntilWoken{&idle_waker, std::move(tx)});
  struct Waking {
    static Task<void> run(spool::oneshot::Receiver<int> rx, std::optional<spool::Waker>* idle,
                          std::optional<spool::Waker>* done) {
      co_await rx;  // the idle task went pending
      spool::Waker to_idle = std::move(**idle);
      spool::Waker to_done = std::move(**done);
      idle->reset();
      done->reset();
      std::move(to_idle).wake();
      std::move(to_done).wake();  // its last reference
    }
  };
  rt.block_on(rt.spawn(Waking::run(std::move(rx), &idle_waker, &done_waker)));
  EXPECT_EQ(rt.block_on(idle), 7);
  EXPECT_EQ(polls.load(), 2);
  EXPECT_EQ(rt.metrics().live_tasks, 0u);
}

TEST(Wake, OfACancelledTaskIsANoOp) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf leaf;
  struct Body {
    static Task<void> run(ManualLeaf leaf) { co_await leaf; }
  };
  auto h = rt.spawn(Body::run(leaf));
  EXPECT_EQ(rt.block_on(rt.spawn(value(0))), 0);  // the task ran and went pending
  h.abort();
  try {
    rt.block_on(h);
    FAIL() << "expected JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled());
  }
  std::uint64_t polls = rt.metrics().workers[0].polls;
  leaf.fire();  // the frame is gone; the leaf's shared state still held its waker
  EXPECT_EQ(rt.block_on(rt.spawn(value(1))), 1);
  EXPECT_EQ(rt.metrics().workers[0].polls, polls + 1) << "only the probe was polled";
}

// Many tasks each wait on a leaf that another thread fires: every wake from outside runs
// its task (on a current-thread runtime, the woken block_on thread runs them).
TEST_P(WakeAnyFlavor, ManyTasksWokenFromAnotherThread) {
  auto rt = build();
  constexpr int kTasks = 200;
  std::vector<ManualLeaf> leaves(kTasks);
  std::vector<spool::JoinHandle<int>> hs;
  for (int i = 0; i < kTasks; ++i)
    hs.push_back(rt.spawn(await_leaf_then(leaves[static_cast<std::size_t>(i)], i)));
  std::thread firer([&leaves] {
    for (auto& l : leaves) {
      l.wait_pending();
      l.fire();
    }
  });
  struct Root {
    static Task<long> run(std::vector<spool::JoinHandle<int>>* hs) {
      long sum = 0;
      for (auto& h : *hs) sum += co_await h;
      co_return sum;
    }
  };
  EXPECT_EQ(rt.block_on(Root::run(&hs)), static_cast<long>(kTasks) * (kTasks - 1) / 2);
  firer.join();
}

// The root registers its waker with two receivers and finishes through the first; the
// second still holds the root's waker, and wakes it after the runtime is gone.
struct FirstOfTwo {
  spool::oneshot::Receiver<int>* first;
  spool::oneshot::Receiver<int>* second;
  spool::Poll<int> poll(spool::Context& cx) {
    spool::Poll<int> p = second->poll(cx);
    if (p.is_ready()) return p;
    return first->poll(cx);
  }
};

TEST_P(WakeAnyFlavor, RootWakerOutlivingTheRuntimeIsSafe) {
  auto [tx1, rx1] = spool::oneshot::channel<int>();
  auto [tx2, rx2] = spool::oneshot::channel<int>();
  EXPECT_TRUE(tx1.send(1));
  {
    auto rt = build();
    EXPECT_EQ(rt.block_on(FirstOfTwo{&rx1, &rx2}), 1);
  }
  EXPECT_TRUE(tx2.send(2));  // wakes the root waker of the finished block_on (ASan checks)
  EXPECT_EQ(spool::block_on(rx2), 2);
}

}  // namespace
