// Stress (run under TSan and ASan): AbortHandle::abort racing the task's completion, from an
// outside thread that also copies and drops the handles, with a quarter of the JoinHandles
// detached (the AbortHandle then holds the header's last reference): every joined task gives
// its value or a cancelled JoinError, and nothing is freed twice or leaked. Then TaskTracker
// rounds: tasks tracked from workers and an outside thread, close() racing their completion,
// wait() seeing every task's plain (non-atomic) write, and that of plain threads releasing
// tokens.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "spool/task_tracker.hpp"

namespace {

using spool::AbortHandle;
using spool::Task;

Task<int> yield_then_value(int i) {
  for (int y = 0; y < i % 3; ++y) co_await spool::yield_now();
  co_return i;
}

TEST(AbortHandleStress, AbortRacesCompletion) {
  constexpr int kTasks = 20'000;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::vector<spool::JoinHandle<int>> handles;
  std::vector<AbortHandle> aborts;
  handles.reserve(kTasks);
  aborts.reserve(kTasks);
  for (int i = 0; i < kTasks; ++i) {
    handles.push_back(rt.spawn(yield_then_value(i)));
    aborts.push_back(handles.back().abort_handle());
    if (i % 4 == 0) handles.back().detach();
  }
  std::thread aborter([&aborts] {
    for (std::size_t i = 0; i < aborts.size(); ++i) {
      const AbortHandle copy = aborts[i];  // one more reference, dropped at once
      if (i % 2 == 0) copy.abort();
      aborts[i] = AbortHandle();  // drops the last AbortHandle of a detached task, maybe
    }
  });
  int values = 0;
  int cancelled = 0;
  for (int i = 0; i < kTasks; ++i) {
    if (i % 4 == 0) continue;  // detached
    try {
      EXPECT_EQ(spool::block_on(std::move(handles[i])), i);
      ++values;
    } catch (const spool::JoinError& e) {
      EXPECT_TRUE(e.is_cancelled());
      EXPECT_EQ(i % 2, 0) << "a task that nobody aborted was cancelled";
      ++cancelled;
    }
  }
  aborter.join();
  EXPECT_EQ(values + cancelled, kTasks - kTasks / 4);
}

constexpr int kRounds = 200;
constexpr int kTasksPerRound = 64;

// Writes its slot (a plain int: wait() must order it before the test's read) and may spawn
// one more tracked task, after close() perhaps.
Task<void> write_slot(spool::TaskTracker tracker, int* slots, int i) {
  co_await spool::yield_now();
  slots[i] = i + 1;
  if (i % 8 == 0 && i < kTasksPerRound) {  // the first generation only
    tracker.spawn(write_slot(tracker, slots, i + kTasksPerRound)).detach();
  }
}

Task<void> close_and_wait(spool::TaskTracker tracker) {
  tracker.close();
  spool::TaskTrackerWait all = tracker.wait();
  co_await std::move(all);
}

TEST(TaskTrackerStress, WaitSeesEveryTrackedTasksWork) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  int missing = 0;
  for (int r = 0; r < kRounds; ++r) {
    spool::TaskTracker tracker;
    std::vector<int> slots(kTasksPerRound * 2, 0);
    std::thread outside([&] {
      for (int i = 0; i < kTasksPerRound; i += 2) {
        tracker.spawn_with(rt.handle(), write_slot(tracker, slots.data(), i)).detach();
      }
    });
    for (int i = 1; i < kTasksPerRound; i += 2) {
      tracker.spawn_with(rt.handle(), write_slot(tracker, slots.data(), i)).detach();
    }
    outside.join();  // every first-generation task is tracked before the close
    spool::block_on(close_and_wait(tracker));
    for (int i = 0; i < kTasksPerRound; ++i) missing += slots[i] == i + 1 ? 0 : 1;
    for (int i = 0; i < kTasksPerRound; i += 8) {
      missing += slots[i + kTasksPerRound] == i + kTasksPerRound + 1 ? 0 : 1;
    }
    EXPECT_TRUE(tracker.is_empty());
  }
  EXPECT_EQ(missing, 0) << "wait() completed before some tracked task had finished";
}

// Tokens released by plain threads, linked to the waiter only through the tracker: each
// thread's plain write must be visible once wait() completes. (The tracker's shared_ptr
// count, an acq_rel RMW of its own, also orders them in practice, so a weaker ordering of
// the drops does not show up here as a TSan report.)
TEST(TaskTrackerStress, WaitSeesTheWorkOfThreadsThatReleasedTokens) {
  constexpr int kThreadRounds = 500;
  constexpr int kThreads = 3;
  int missing = 0;
  for (int r = 0; r < kThreadRounds; ++r) {
    spool::TaskTracker tracker;
    std::vector<int> slots(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&slots, t, token = tracker.token()]() mutable {
        slots[t] = t + 1;
        token.release();
      });
    }
    spool::block_on(close_and_wait(tracker));
    for (int t = 0; t < kThreads; ++t) missing += slots[t] == t + 1 ? 0 : 1;
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(missing, 0) << "wait() completed before a token's work was visible";
}

}  // namespace
