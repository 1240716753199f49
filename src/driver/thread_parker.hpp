// ThreadParker: blocks one thread until another thread unparks it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "spool/core/reactor_hook.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::detail {

// A one-thread parker with a sticky unpark token. park() blocks the owning thread —
// in a ReactorHook when given one, else on a condition variable — until unpark() is
// called; an unpark before the park makes the park return at once. unpark() is
// thread-safe and cheap when the owner is not parked (no syscall).
class ThreadParker {
 public:
  // Called only by the owning thread. `hook` (may be null) must stay the same for every
  // call once non-null; the parker keeps it alive for late unparks.
  void park(const std::shared_ptr<ReactorHook>& hook);
  // Any thread.
  void unpark() noexcept;

 private:
  void park_on_condvar();
  void park_in_hook();

  // State word:
  //   kEmpty        no token, owner not parked.
  //   kNotified     an unpark token is waiting to be consumed by park().
  //   kParkedThread owner is (about to be) blocked on cv_.
  //   kParkedHook   owner is (about to be) blocked in hook_->park().
  // The owner moves Empty→Parked* (CAS, acq_rel) and Notified→Empty (CAS, acquire:
  // pairs with unpark's release, so what the waker wrote before waking is visible).
  // unpark() swaps in kNotified (acq_rel: release for the owner; acquire pairs with the
  // owner's CAS to kParkedHook, which publishes hook_).
  Atomic<std::uint32_t> state_{kEmpty};
  static constexpr std::uint32_t kEmpty = 0;
  static constexpr std::uint32_t kNotified = 1;
  static constexpr std::uint32_t kParkedThread = 2;
  static constexpr std::uint32_t kParkedHook = 3;

  std::mutex mutex_;
  std::condition_variable cv_;
  // Written by the owner before its first CAS to kParkedHook (published by that CAS);
  // read by unpark() only after it saw kParkedHook. Never changed once set.
  std::shared_ptr<ReactorHook> hook_;
};

}  // namespace spool::detail
