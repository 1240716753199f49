// Leaf futures for runtime tests: one fired by hand from any thread, and one that never is.
#pragma once

#include <atomic>
#include <memory>

#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool_rt_test {

/// A leaf future that becomes ready when fire() is called (from any thread). Copies share
/// one state, so the test keeps a copy to fire while a task awaits another copy. It follows
/// the leaf contract: every pending poll registers the latest waker, and re-checks after
/// registering so a concurrent fire() is never lost.
class ManualLeaf {
 public:
  ManualLeaf() : s_(std::make_shared<State>()) {}

  spool::Poll<void> poll(spool::Context& cx) {
    if (s_->fired.load(std::memory_order_acquire)) return spool::Poll<void>::ready();
    s_->waker.register_waker(cx.waker());
    if (s_->fired.load(std::memory_order_acquire)) return spool::Poll<void>::ready();
    // Release: a thread that sees the new count (wait_pending) sees the registration.
    s_->pending_polls.fetch_add(1, std::memory_order_release);
    s_->pending_polls.notify_all();
    return spool::pending;
  }

  /// Makes the leaf ready and wakes the task that waits on it.
  void fire() {
    s_->fired.store(true, std::memory_order_release);
    s_->waker.wake();
  }

  /// Pending polls so far.
  int pending_polls() const { return s_->pending_polls.load(std::memory_order_acquire); }

  /// Blocks the calling thread until the leaf has returned pending at least `n` times
  /// (so the awaiting task stored its waker here and is about to go idle).
  void wait_pending(int n = 1) const {
    for (;;) {
      int seen = s_->pending_polls.load(std::memory_order_acquire);
      if (seen >= n) return;
      s_->pending_polls.wait(seen, std::memory_order_acquire);
    }
  }

 private:
  struct State {
    // fired: written by fire() (release store, then wake); read by poll() (acquire load) before
    // and after register_waker, which pairs with it: a fire the re-check misses wakes the waker.
    std::atomic<bool> fired{false};
    // pending_polls: written by poll() (release fetch_add, then notify_all) after registering;
    // read by pending_polls() and wait_pending() (acquire), which pairs with it: a reader that
    // sees the count also sees the registration (release/acquire).
    std::atomic<int> pending_polls{0};
    spool::AtomicWaker waker;
  };
  std::shared_ptr<State> s_;
};

/// A leaf future that is pending forever (nothing can make it progress, so it stores no
/// waker). A task awaiting it ends only by cancellation.
struct NeverReady {
  spool::Poll<void> poll(spool::Context&) { return spool::pending; }
};

}  // namespace spool_rt_test
