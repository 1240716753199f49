// ThreadParker: blocks one thread until another thread unparks it (the bottom of the
// driver stack, and every scheduler thread's own parker).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "driver/park.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::detail {

// A one-thread parker with a sticky unpark token. The owning thread blocks either on a
// condition variable (park, with an optional timeout: the Park interface, so it is the
// bottom layer of the driver stack) or in a Park layer above it (park_in: a worker that
// holds the runtime's driver parks in the driver stack, and this parker's unpark then
// interrupts the stack). An unpark before the park makes the park return at once.
// unpark() is thread-safe and cheap when the owner is not parked (no syscall).
class ThreadParker final : public Park {
 public:
  // Owner only: blocks on the condition variable until unparked or `timeout` elapsed.
  void park(std::optional<std::chrono::nanoseconds> timeout) override;
  // Owner only: returns at once if a token is there, else parks once in `hook` (null: on
  // the condition variable) until it returns — after an unpark, or after it dispatched
  // events (fired wakers), or spuriously; the caller re-checks its own condition. `hook`
  // must stay the same for every call once non-null; the parker keeps it alive for late
  // unparks.
  void park_in(const std::shared_ptr<Park>& hook);
  // Any thread.
  void unpark() noexcept override;

 private:
  // State word:
  //   kEmpty        no token, owner not parked.
  //   kNotified     an unpark token is waiting to be consumed by park().
  //   kParkedThread owner is (about to be) blocked on cv_.
  //   kParkedHook   owner is (about to be) blocked in hook_->park().
  // The owner moves Empty→Parked* (CAS, acq_rel) and Notified→Empty (CAS or exchange,
  // acquire: pairs with unpark's release, so what the waker wrote before waking is
  // visible). unpark() swaps in kNotified (acq_rel: release for the owner; acquire pairs
  // with the owner's CAS to kParkedHook, which publishes hook_).
  Atomic<std::uint32_t> state_{kEmpty};
  static constexpr std::uint32_t kEmpty = 0;
  static constexpr std::uint32_t kNotified = 1;
  static constexpr std::uint32_t kParkedThread = 2;
  static constexpr std::uint32_t kParkedHook = 3;

  bool take_token() noexcept;
  void park_in_hook();

  std::mutex mutex_;
  std::condition_variable cv_;
  // Written by the owner before its first CAS to kParkedHook (published by that CAS);
  // read by unpark() only after it saw kParkedHook. Never changed once set.
  std::shared_ptr<Park> hook_;
};

}  // namespace spool::detail
