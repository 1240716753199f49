#include "driver/thread_parker.hpp"

namespace spool::detail {

bool ThreadParker::take_token() noexcept {
  std::uint32_t notified = kNotified;
  // Acquire pairs with unpark's release.
  return state_.compare_exchange_strong(notified, kEmpty, std::memory_order_acquire);
}

void ThreadParker::park_in(const std::shared_ptr<Park>& hook) {
  if (take_token()) return;
  if (!hook) {
    park(std::nullopt);
    return;
  }
  if (!hook_) hook_ = hook;
  park_in_hook();
}

void ThreadParker::park_in_hook() {
  std::uint32_t expected = kEmpty;
  // Release publishes hook_ to the unpark() that sees kParkedHook.
  if (state_.compare_exchange_strong(expected, kParkedHook, std::memory_order_acq_rel)) {
    // An unpark that saw kParkedHook calls hook_->unpark(), whose token is sticky, so a
    // wake between the CAS above and this call still makes park return.
    hook_->park(std::nullopt);
  }
  // Back to kEmpty, consuming a token if an unpark came (acquire pairs with its release).
  // The hook may also have returned because it fired wakers: the caller re-checks.
  state_.exchange(kEmpty, std::memory_order_acquire);
}

void ThreadParker::park(std::optional<std::chrono::nanoseconds> timeout) {
  if (take_token()) return;
  if (timeout && *timeout <= std::chrono::nanoseconds::zero()) return;  // a poll: no syscall
  std::unique_lock lock(mutex_);
  std::uint32_t expected = kEmpty;
  if (!state_.compare_exchange_strong(expected, kParkedThread, std::memory_order_acq_rel)) {
    // It was kNotified: consume the token. Acquire pairs with unpark's release.
    state_.exchange(kEmpty, std::memory_order_acquire);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  // Saturating: a timeout past the clock's range waits for an unpark only.
  const auto deadline = timeout && *timeout < std::chrono::steady_clock::time_point::max() - now
                            ? now + *timeout
                            : std::chrono::steady_clock::time_point::max();
  for (;;) {
    if (timeout) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        // Back to kEmpty, consuming a token that raced with the timeout (acquire).
        state_.exchange(kEmpty, std::memory_order_acquire);
        return;
      }
    } else {
      cv_.wait(lock);
    }
    if (take_token()) return;
    // Spurious wake-up: still kParkedThread.
  }
}

void ThreadParker::unpark() noexcept {
  switch (state_.exchange(kNotified, std::memory_order_acq_rel)) {
    case kParkedThread:
      // Taking the lock orders this notify after the owner's wait began (the owner holds
      // the lock from its CAS until cv_.wait releases it), so the notify cannot be lost.
      { std::lock_guard lock(mutex_); }
      cv_.notify_one();
      return;
    case kParkedHook:
      hook_->unpark();
      return;
    default:  // kEmpty or kNotified: the owner will find the token before it blocks
      return;
  }
}

}  // namespace spool::detail
