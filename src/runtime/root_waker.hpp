// The waker of a block_on's root future.
#pragma once

#include <atomic>

#include "driver/thread_parker.hpp"

namespace spool::detail {

// Waking sets `woken` and unparks `target`: the block_on thread's own parker, or the
// parker of the current-thread runtime it drives (so that the same park serves both the
// root's wake-ups and the tasks').
class RootWaker {
 public:
  explicit RootWaker(ThreadParker* target = nullptr) noexcept : target_(target ? target : &own_) {}
  void wake() noexcept {
    // Release: what the waker wrote is visible to the block_on thread's acquire exchange.
    woken.store(true, std::memory_order_release);
    target_->unpark();
  }
  ThreadParker& parker() noexcept { return *target_; }

  // Set by wake(), consumed (exchange false, acquire) by the block_on thread before each
  // park (the first poll needs no wake).
  std::atomic<bool> woken{false};

 private:
  ThreadParker own_;
  ThreadParker* target_;
};

}  // namespace spool::detail
