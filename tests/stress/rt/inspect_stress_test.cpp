// Stress (run under TSan and ASan): reading other tasks' backtraces (Runtime::tasks(),
// AbortHandle::backtrace) from outside threads while the tasks are woken, aborted, or shut
// down with their runtime. Each read holds an idle task for a moment: a wake meanwhile must still
// bring the next poll (every task below finishes only if none is lost), an abort meanwhile
// must still cancel it, and a shutdown meanwhile must neither free the runtime under the
// reader nor leave the task uncancelled.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::Task;

constexpr int kTasks = 32;
constexpr int kWakes = 2000;  // per task

// Receives values until the channel closes, one at a time (each one, mostly, a wake from
// the sending thread): the count.
Task<int> count_values(spool::mpsc::Receiver<int> rx) {
  int n = 0;
  while (co_await rx.recv()) ++n;
  co_return n;
}

TEST(InspectStress, WakesDuringReadsAreNotLost) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::vector<spool::mpsc::UnboundedSender<int>> senders;
  std::vector<spool::JoinHandle<int>> handles;
  std::vector<spool::AbortHandle> aborts;  // the reader's (a JoinHandle is its owner's alone)
  for (int t = 0; t < kTasks; ++t) {
    auto [tx, rx] = spool::mpsc::unbounded_channel<int>();
    senders.push_back(std::move(tx));
    handles.push_back(rt.spawn(count_values(std::move(rx))));
    aborts.push_back(handles.back().abort_handle());
  }
  // Written by the main thread once every task finished (relaxed: the readers only stop on
  // it, and they are joined before anything they read goes).
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load(std::memory_order_relaxed)) {
      for (const spool::TaskSnapshot& s : rt.tasks()) {
        if (s.backtrace) {
          EXPECT_EQ(s.backtrace->frames.size(), 1u);
        }
      }
    }
  });
  std::thread handle_reader([&] {
    while (!done.load(std::memory_order_relaxed)) {
      for (const auto& a : aborts) {
        if (auto bt = a.backtrace()) {
          EXPECT_EQ(bt->frames.size(), 1u);
        }
      }
    }
  });
  std::thread sender([&] {
    for (int i = 0; i < kWakes; ++i) {
      for (auto& tx : senders) tx.send(i);
    }
    senders.clear();  // closes the channels: each task returns its count
  });
  for (auto& h : handles) EXPECT_EQ(spool::block_on(h), kWakes);
  done.store(true, std::memory_order_relaxed);
  sender.join();
  reader.join();
  handle_reader.join();
}

TEST(InspectStress, AbortsDuringReadsCancel) {
  constexpr int kRounds = 20;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  for (int round = 0; round < kRounds; ++round) {
    std::vector<spool::JoinHandle<void>> handles;
    std::vector<spool::AbortHandle> aborts;  // the reader's
    std::vector<spool_rt_test::ManualLeaf> started(kTasks);
    for (int t = 0; t < kTasks; ++t) {
      handles.push_back(rt.spawn([](spool_rt_test::ManualLeaf started) -> Task<void> {
        co_await started;
        co_await spool_rt_test::NeverReady{};
      }(started[static_cast<std::size_t>(t)])));
      aborts.push_back(handles.back().abort_handle());
    }
    for (auto& s : started) s.fire();
    std::thread reader([&] {
      for (int i = 0; i < 50; ++i) (void)rt.tasks();
    });
    std::thread handle_reader([&] {
      for (int i = 0; i < 50; ++i) {
        for (const auto& a : aborts) (void)a.backtrace();
      }
    });
    for (auto& h : handles) h.abort();
    for (auto& h : handles) {
      try {
        spool::block_on(h);
        ADD_FAILURE() << "an aborted task that never finishes returned";
      } catch (const spool::JoinError& e) {
        EXPECT_TRUE(e.is_cancelled());
      }
    }
    reader.join();
    handle_reader.join();
  }
}

// The runtime dropped (shut down) while another thread reads its tasks' backtraces through
// their AbortHandles, which outlive it.
TEST(InspectStress, ShutdownDuringReadsCancelsEveryTask) {
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<spool::AbortHandle> aborts;
    std::vector<spool::JoinHandle<void>> handles;
    std::thread reader;
    {
      auto rt = spool::Builder::multi_thread().worker_threads(2).build();
      for (int t = 0; t < kTasks; ++t) {
        handles.push_back(rt.spawn([]() -> Task<void> { co_await spool_rt_test::NeverReady{}; }()));
        aborts.push_back(handles.back().abort_handle());
      }
      reader = std::thread([&aborts] {  // reads on past the runtime's drop
        for (int i = 0; i < 50; ++i) {
          for (const auto& a : aborts) (void)a.backtrace();
        }
      });
    }
    // The drop cancelled every task, even one a read held at the time, before it returned:
    // checked while the reader may still read (both threads only read the AbortHandles).
    for (const auto& a : aborts) EXPECT_TRUE(a.is_finished());
    reader.join();
    for (auto& h : handles) {
      try {
        spool::block_on(h);
        ADD_FAILURE() << "a task of a runtime shut down returned";
      } catch (const spool::JoinError& e) {
        EXPECT_TRUE(e.is_cancelled());
      }
    }
  }
}

}  // namespace
