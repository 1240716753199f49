#include "driver/thread_parker.hpp"

namespace spool::detail {

void ThreadParker::park(const std::shared_ptr<ReactorHook>& hook) {
  std::uint32_t notified = kNotified;
  // Fast path: a token is already there. Acquire pairs with unpark's release.
  if (state_.compare_exchange_strong(notified, kEmpty, std::memory_order_acquire)) return;
  if (hook) {
    if (!hook_) hook_ = hook;
    park_in_hook();
  } else {
    park_on_condvar();
  }
}

void ThreadParker::park_in_hook() {
  std::uint32_t expected = kEmpty;
  // Release publishes hook_ to the unpark() that sees kParkedHook.
  if (!state_.compare_exchange_strong(expected, kParkedHook, std::memory_order_acq_rel)) {
    // An unpark raced in (state is kNotified): consume it. Acquire pairs with its release.
    state_.exchange(kEmpty, std::memory_order_acquire);
    return;
  }
  for (;;) {
    // An unpark that saw kParkedHook calls hook_->unpark(), whose token is sticky, so a
    // wake between the CAS above and this call still makes park return.
    hook_->park(std::nullopt);
    std::uint32_t notified = kNotified;
    if (state_.compare_exchange_strong(notified, kEmpty, std::memory_order_acquire)) return;
    // The hook returned for an event that did not wake this thread's task: park again.
  }
}

void ThreadParker::park_on_condvar() {
  std::unique_lock lock(mutex_);
  std::uint32_t expected = kEmpty;
  if (!state_.compare_exchange_strong(expected, kParkedThread, std::memory_order_acq_rel)) {
    // It was kNotified: consume the token. Acquire pairs with unpark's release.
    state_.exchange(kEmpty, std::memory_order_acquire);
    return;
  }
  for (;;) {
    cv_.wait(lock);
    std::uint32_t notified = kNotified;
    if (state_.compare_exchange_strong(notified, kEmpty, std::memory_order_acquire)) return;
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
