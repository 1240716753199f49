// Helpers for the timer tests: a paused runtime, a future that polls another once, a future
// that records its destruction, and a twenty-line foreign executor (not spool's block_on).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "spool/spool.hpp"

namespace spool_time_test {

using namespace std::chrono_literals;

/// A current-thread runtime whose clock starts paused.
inline spool::Runtime paused_runtime() {
  return spool::Builder::current_thread().start_paused(true).build();
}

/// The current runtime's timer counters (inside one of its tasks or its block_on).
inline spool::RuntimeMetrics metrics() { return spool::Handle::current().metrics(); }

/// Polls `*fut` once with the awaiting task's Context (its waker and reactor slot) and is
/// ready at once with whether that poll was ready. `co_await poll_once(sleep)` thus arms a
/// Sleep in place (it must not move afterwards) without waiting for it.
template <class F>
class PollOnce {
 public:
  explicit PollOnce(F& fut) noexcept : fut_(&fut) {}
  spool::Poll<bool> poll(spool::Context& cx) {
    return spool::Poll<bool>::ready(fut_->poll(cx).is_ready());
  }

 private:
  F* fut_;
};
template <class F>
PollOnce<F> poll_once(F& fut) {
  return PollOnce<F>(fut);
}

/// Pending forever; sets `*dropped` when destroyed (the moved-from shell does not).
/// Written and read on the runtime's one thread (current-thread tests): no atomics.
class PendingDropFlag {
 public:
  explicit PendingDropFlag(bool* dropped) noexcept : dropped_(dropped) {}
  PendingDropFlag(PendingDropFlag&& other) noexcept
      : dropped_(std::exchange(other.dropped_, nullptr)) {}
  PendingDropFlag& operator=(PendingDropFlag&&) = delete;
  ~PendingDropFlag() {
    if (dropped_ != nullptr) *dropped_ = true;
  }
  spool::Poll<int> poll(spool::Context&) { return spool::pending; }

 private:
  bool* dropped_;
};

/// The wake target of run_foreign's waker: a flag and a condition variable, and the
/// executor's own reactor (unparked too) when it has one.
class CvWake {
 public:
  void wake() {
    {
      std::lock_guard lock(mutex_);
      woken_ = true;
    }
    cv_.notify_one();
    if (reactor_) reactor_->unpark();
  }
  // Waits for a wake and consumes it: on the condition variable, or in the reactor, where
  // it parks at least once (the reactor's token is sticky: a wake that came first makes
  // that park return at once).
  void wait() {
    if (reactor_) {
      for (;;) {
        reactor_->park(std::nullopt);
        std::lock_guard lock(mutex_);
        if (std::exchange(woken_, false)) return;
      }
    }
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return woken_; });
    woken_ = false;
  }
  explicit CvWake(std::shared_ptr<spool::ReactorHook> reactor) : reactor_(std::move(reactor)) {}

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool woken_ = false;  // guarded by mutex_
  std::shared_ptr<spool::ReactorHook> reactor_;
};

/// A foreign executor (not spool's block_on): polls `fut` in a loop with a waker made by
/// spool::Waker::from(shared_ptr<CvWake>) and a Context whose reactor slot is `slot` (null:
/// none at all); between polls it waits on the condition variable, or parks in `park_in`
/// when given. Returns the output; counts the pending polls in `*pending_polls` (an int, or
/// a std::atomic<int> that another thread may wait on: it is notified at each count).
/// Atomic protocol: only this executor writes the count (++: a seq_cst fetch_add, then
/// notify_all); the other thread reads it with seq_cst wait()/load(), which see the
/// increment made before this executor waits for a wake.
template <class F, class Count>
auto run_foreign(F& fut, spool::ReactorSlot* slot, Count* pending_polls,
                 std::shared_ptr<spool::ReactorHook> park_in = nullptr) {
  auto target = std::make_shared<CvWake>(std::move(park_in));
  const spool::Waker waker = spool::Waker::from(target);
  spool::Context cx(waker, slot);
  for (;;) {
    auto p = fut.poll(cx);
    if (p.is_ready()) return std::move(p).value();
    ++*pending_polls;
    if constexpr (requires { pending_polls->notify_all(); }) pending_polls->notify_all();
    target->wait();
  }
}

}  // namespace spool_time_test
