// The waker of a block_on's root future.
#pragma once

#include <atomic>
#include <memory>
#include <utility>

#include "driver/thread_parker.hpp"

namespace spool::detail {

// Waking sets `woken` and unparks `target`: the block_on thread's own parker, or the
// parker of the current-thread runtime it drives (so that the same park serves both the
// root's wake-ups and the tasks'). The runtime's parker is shared: a clone of this waker
// kept by some future may be woken after block_on returned and the runtime is gone.
class RootWaker {
 public:
  explicit RootWaker(std::shared_ptr<ThreadParker> target = nullptr) noexcept
      : target_(std::move(target)) {}
  void wake() noexcept {
    // Release: what the waker wrote is visible to the block_on thread's acquire exchange.
    woken.store(true, std::memory_order_release);
    parker().unpark();
  }
  ThreadParker& parker() noexcept { return target_ ? *target_ : own_; }

  // Set by wake(), consumed (exchange false, acquire) by the block_on thread before each
  // park (the first poll needs no wake).
  std::atomic<bool> woken{false};

 private:
  ThreadParker own_;
  std::shared_ptr<ThreadParker> target_;
};

}  // namespace spool::detail
