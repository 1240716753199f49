// The waker of a block_on's root future.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "driver/thread_parker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::detail {

// Waking sets `woken` and unparks the block_on thread's own parker and, for a block_on on
// a current-thread runtime, the runtime's parker: the thread parks on the latter while it
// drives the runtime's tasks (so that one park serves both the root's wake-ups and the
// tasks'), on its own while another thread drives, and may start driving mid-way. (A wake
// of a non-driving root thus also wakes the driver once, spuriously.) The runtime's parker
// is shared: a clone of this waker kept by some future may be woken after block_on
// returned and the runtime is gone.
class RootWaker {
 public:
  explicit RootWaker(std::shared_ptr<ThreadParker> runtime_parker = nullptr) noexcept
      : runtime_parker_(std::move(runtime_parker)) {}
  void wake() noexcept {
    // Release: what the waker wrote is visible to the block_on thread's acquire exchange.
    woken.store(true, std::memory_order_release);
    own_.unpark();
    if (runtime_parker_) runtime_parker_->unpark();
  }
  // Where the block_on thread parks while it does not drive a runtime.
  ThreadParker& parker() noexcept { return own_; }
  // Parks the block_on thread (in `reactor` if not null: the reactor a polled future
  // installed; else after spinning a few microseconds for the wake) until wake() was
  // called; returns at once if it already was.
  void wait(const std::shared_ptr<ReactorHook>& reactor) {
    // Once per call: a park that returns at once (the token of a wake caught by an earlier
    // spin) goes straight back to parking.
    bool spun = reactor != nullptr;
    while (!woken.exchange(false, std::memory_order_acquire)) {
      if (!std::exchange(spun, true) && spin_for_wake()) continue;
      own_.park_in(reactor);
    }
  }

  // Set by wake() (release), consumed (exchange false, acquire) by the block_on thread
  // before each park (the first poll needs no wake); read relaxed by spin_for_wake.
  std::atomic<bool> woken{false};

 private:
  // Whether a wake came within a few microseconds. A thread waiting for the workers' tasks
  // is often woken that soon, and a wake caught here finds the parker unparked: neither side
  // makes a futex call. Bounded in time (a pause takes 3 ns on some CPUs, 40 on others);
  // every 16 pauses the CPU goes to the waker, should it be waiting for this one's CPU.
  bool spin_for_wake() const noexcept {
    const auto until = std::chrono::steady_clock::now() + kSpinFor;
    do {
      for (int i = 0; i < 16; ++i) {
        // Relaxed: a hint; wait()'s exchange acquires what the waker wrote.
        if (woken.load(std::memory_order_relaxed)) return true;
        cpu_relax();
      }
      spin_pause();
    } while (std::chrono::steady_clock::now() < until);
    return false;
  }
  static constexpr std::chrono::microseconds kSpinFor{3};

  ThreadParker own_;
  std::shared_ptr<ThreadParker> runtime_parker_;
};

// Runs `fn`, which blocks the calling thread. On a worker of a multi-thread runtime whose
// core holds tasks (LIFO slot, queues, fork deque), the core goes to another thread first,
// as block_in_place does: what `fn` waits for may need one of them. Elsewhere: fn().
void block_off_core(const std::function<void()>& fn);

// Blocks the calling thread until `done()`, read with `lock` held, is true. Meanwhile
// `waiter` (guarded by `lock`) holds a waker of this thread, which whoever makes `done()`
// true takes out under the lock and wakes. (Made only if the first look finds it false.)
template <class Lock, class Done>
void block_until(Lock& lock, Waker& waiter, Done&& done) {
  {
    std::lock_guard guard(lock);
    if (done()) return;
  }
  auto wait = [&] {
    auto root = std::make_shared<RootWaker>();
    const Waker wake_root = Waker::from(root);
    for (;;) {
      {
        std::lock_guard guard(lock);
        if (done()) return;
        waiter = wake_root;
      }
      root->wait(nullptr);
    }
  };
  block_off_core([&wait] { wait(); });  // one reference: std::function holds it inline
}

}  // namespace spool::detail
