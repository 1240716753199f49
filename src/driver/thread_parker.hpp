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

// A one-thread parker with a sticky unpark token. The owner blocks on a condition variable
// (park: the bottom layer of the driver stack) or in the driver (park_in), which unpark then
// interrupts. unpark() makes no system call when the owner is not parked.
class ThreadParker final : public Park {
 public:
  // Owner only: blocks on the condition variable until unparked or `timeout` elapsed.
  void park(std::optional<std::chrono::nanoseconds> timeout) override;
  // Owner only: consumes a token, or parks once in `hook` (null: the condition variable);
  // it may return after firing wakers or spuriously: the caller re-checks. A non-null `hook`
  // must be the same on every call; it is kept alive for late unparks.
  void park_in(const std::shared_ptr<Park>& hook);
  // Any thread.
  void unpark() noexcept override;

 private:
  // The owner moves Empty→Parked* (CAS, acq_rel) and Notified→Empty (acquire: pairs with
  // unpark's release). unpark() swaps in kNotified (acq_rel: its acquire pairs with the
  // owner's CAS to kParkedHook, which publishes hook_).
  Atomic<std::uint32_t> state_{kEmpty};
  static constexpr std::uint32_t kEmpty = 0;         // no token, owner not parked
  static constexpr std::uint32_t kNotified = 1;      // a token waits
  static constexpr std::uint32_t kParkedThread = 2;  // owner (about to be) blocked on cv_
  static constexpr std::uint32_t kParkedHook = 3;    // owner (about to be) in hook_->park()

  bool take_token() noexcept;
  void park_in_hook();

  std::mutex mutex_;
  std::condition_variable cv_;
  // Set once by the owner before its first CAS to kParkedHook; read by unpark() after it.
  std::shared_ptr<Park> hook_;
};

}  // namespace spool::detail
