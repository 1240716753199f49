// Helpers for the priority-level tests (tests/integration/levels, tests/stress/levels): an
// ordered record of what tasks did, a yield that requeues at once, workers held busy while the
// test queues work, and per-channel metrics by name.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_gate.hpp"

namespace spool_levels_test {

/// An ordered record of events ("H0 started", "L3"), appended from any thread: the order of
/// add() calls is the order of the record (one mutex).
class Record {
 public:
  void add(std::string event) {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> events_;  // guarded by mutex_
};

/// Prints a record for a failure message: "[H0 H1 L0]".
inline std::string show(const std::vector<std::string>& events) {
  std::string out = "[";
  for (const std::string& e : events) {
    if (out.size() > 1) out += ' ';
    out += e;
  }
  return out + "]";
}

/// A task that adds `event` to `record` and ends (one poll).
inline spool::Task<void> note(Record* record, std::string event) {
  record->add(std::move(event));
  co_return;
}

/// A future that is pending once and wakes its task at once: the task goes straight back to
/// the end of its channel's queue, runnable again, as a task whose budget ran out does.
/// (spool::yield_now defers the wake-up until the thread has run the rest of its queue, so a
/// level whose tasks all yield_now has nothing runnable in between: it is not saturated.)
class Requeue {
 public:
  spool::Poll<void> poll(spool::Context& cx) {
    if (requeued_) return spool::Poll<void>::ready();
    requeued_ = true;
    cx.waker().wake_by_ref();
    return spool::pending;
  }

 private:
  bool requeued_ = false;
};

/// Blocks the calling thread (a worker) for about `d`, computing.
inline void spin_for(std::chrono::nanoseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

/// Counts down `started`, then blocks its worker thread until `release` opens.
inline spool::Task<void> hold_worker(std::latch* started, const spool_rt_test::Gate* release) {
  started->count_down();
  release->wait();
  co_return;
}

/// Keeps `n` workers of a multi-thread runtime busy in tasks on `channel` that block until
/// release(), so that the test can queue work that none of them takes yet. The constructor
/// returns once all `n` are blocked. On a current-thread runtime (`multi_thread` false) it
/// does nothing: tasks run there only inside block_on, so whatever is spawned from outside
/// stays queued anyway.
class HeldWorkers {
 public:
  HeldWorkers(spool::Runtime& rt, bool multi_thread, spool::ChannelId channel, int n)
      : started_(multi_thread ? n : 0) {
    if (!multi_thread) return;
    for (int i = 0; i < n; ++i)
      holders_.push_back(rt.spawn_on(channel, hold_worker(&started_, &release_)));
    started_.wait();
  }
  HeldWorkers(const HeldWorkers&) = delete;
  HeldWorkers& operator=(const HeldWorkers&) = delete;
  /// Releases the workers and waits for the holding tasks to end.
  ~HeldWorkers() {
    release();
    for (auto& h : holders_) spool::block_on(h);
  }
  /// Lets the held workers go on (idempotent).
  void release() { release_.open(); }
  /// How many tasks hold workers (each is polled once).
  std::size_t count() const { return holders_.size(); }

 private:
  std::latch started_;
  spool_rt_test::Gate release_;
  std::vector<spool::JoinHandle<void>> holders_;
};

/// The metrics of the channel called `name`.
inline const spool::ChannelMetrics& channel_metrics(const spool::RuntimeMetrics& m,
                                                    std::string_view name) {
  for (const spool::ChannelMetrics& c : m.channels) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no channel \"" << name << "\" in the metrics";
  static const spool::ChannelMetrics none{};
  return none;
}

/// Polls over all channels.
inline std::uint64_t total_polled(const spool::RuntimeMetrics& m) {
  std::uint64_t n = 0;
  for (const spool::ChannelMetrics& c : m.channels) n += c.polled;
  return n;
}

/// The metrics once at least `polls` polls have been counted. A multi-thread worker counts a
/// poll after the poll returns, so a task the test has joined may not be counted yet; a
/// current-thread runtime has counted every poll by the time its block_on returns.
inline spool::RuntimeMetrics metrics_after(const spool::Runtime& rt, std::uint64_t polls) {
  spool::RuntimeMetrics m = rt.metrics();
  spool_rt_test::spin_until([&] {
    if (total_polled(m) >= polls) return true;
    m = rt.metrics();
    return false;
  });
  return m;
}

}  // namespace spool_levels_test
