// spool::AtomicWaker: a slot for one Waker, shared by the task that waits and whoever wakes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>

#include "spool/core/waker.hpp"
#include "spool/detail/atomic.hpp"

namespace spool {

/// Holds the waker of the one task waiting on an event, and wakes it when the event fires,
/// with the semantics of the atomic-waker primitive:
///  - register_waker(w) then wake(): w (or a waker that wakes the same task) is woken.
///  - wake() before any register_waker: nothing happens (no wake-up is stored).
///  - register_waker concurrent with wake(): the wake-up is never lost — if the waker
///    cannot tell whether it saw the new waker, the registering side wakes it itself.
/// register_waker must be called by one task at a time (the waiting one); wake and take may
/// be called from any number of threads at once.
class AtomicWaker {
 public:
  AtomicWaker() = default;
  AtomicWaker(const AtomicWaker&) = delete;
  AtomicWaker& operator=(const AtomicWaker&) = delete;

  /// Stores (a clone of) `waker` to be woken by the next wake(). Cheap when `waker` wakes
  /// the same task as the stored one. Throws std::logic_error when called from two threads
  /// at once (only the waiting task may register). If cloning `waker` throws, the exception
  /// propagates and the previous registration stays in place.
  void register_waker(const Waker& waker) {
    std::uint32_t prev = kWaiting;
    // Acquire: pairs with the release of the previous register's unlock and of take()'s
    // unlock, so this thread sees the slot as they left it.
    if (state_.compare_exchange_strong(prev, kRegistering, std::memory_order_acquire,
                                       std::memory_order_acquire)) {
      // We hold the REGISTERING lock: no one else touches waker_.
      std::optional<Waker> old;
      if (!waker_ || !waker_->will_wake(waker)) {
        std::optional<Waker> fresh;
        try {
          fresh.emplace(waker);  // the clone may throw: the slot is not changed yet
        } catch (...) {
          // Unlock (delivering a wake that came in meanwhile to the waker that stays
          // registered), so that a failed clone does not leave the slot locked forever.
          unlock_registering();
          throw;
        }
        old = std::move(waker_);
        waker_ = std::move(fresh);
      }
      unlock_registering();
      return;  // `old` is dropped here, outside the lock
    }
    if (prev == kWaking) {
      // A wake() is taking the old waker right now; it may not see ours, so wake ours.
      waker.wake_by_ref();
      return;
    }
    // prev is REGISTERING or REGISTERING|WAKING: another register_waker runs concurrently.
    throw std::logic_error(
        "spool::AtomicWaker::register_waker called concurrently from two threads: only the "
        "one task waiting on the event may register its waker");
  }

  /// Wakes the registered waker, if any, and empties the slot.
  void wake() {
    take_then([](Waker&& w) { std::move(w).wake(); });
  }

  /// Removes and returns the registered waker (nullopt if none, or if a concurrent
  /// register_waker holds the slot — that registration then wakes its own waker).
  std::optional<Waker> take() {
    std::optional<Waker> taken;
    take_then([&](Waker&& w) { taken.emplace(std::move(w)); });
    return taken;
  }

 private:
  // Takes the registered waker out of the slot, if there is one and no concurrent
  // register_waker holds the slot, and passes it to `use` once the slot is unlocked. (The
  // waker is moved out of the optional, never the optional itself: g++ 12 at -O1 warns that a
  // moved std::optional<Waker> "may be used uninitialized".)
  template <class Use>
  void take_then(Use&& use) {
    // AcqRel: acquire pairs with register_waker's release of the slot; the WAKING bit also
    // tells a concurrent register_waker that it must wake its waker itself.
    std::uint32_t prev = state_.fetch_or(kWaking, std::memory_order_acq_rel);
    if (prev != kWaiting) return;  // a register or another take holds the lock
    if (!waker_) {
      // Release: publishes the (still empty) slot to the next register_waker's acquire.
      state_.fetch_and(~kWaking, std::memory_order_release);
      return;
    }
    Waker w = std::move(*waker_);
    waker_.reset();
    // Release: publishes the emptied slot to the next register_waker's acquire.
    state_.fetch_and(~kWaking, std::memory_order_release);
    use(std::move(w));
  }

  // Ends a registration: REGISTERING -> WAITING. If a wake() came in while the lock was
  // held (state is REGISTERING|WAKING), it could not take the waker, so the registering
  // side takes it, unlocks and wakes it itself.
  void unlock_registering() {
    std::uint32_t expected = kRegistering;
    // AcqRel: release publishes the new waker to the take() that acquires the state next;
    // acquire (on failure) sees the WAKING bit a concurrent wake() set.
    if (state_.compare_exchange_strong(expected, kWaiting, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      return;
    }
    std::optional<Waker> to_wake = std::move(waker_);
    waker_.reset();
    // AcqRel: release hands the (now empty) slot to the next locker.
    state_.exchange(kWaiting, std::memory_order_acq_rel);
    if (to_wake) std::move(*to_wake).wake();
  }

  // State bits (the lock protocol of the atomic-waker primitive):
  //   WAITING (0)      idle: the slot may be read by take() or written by register_waker().
  //   REGISTERING (1)  register_waker holds the slot; set and cleared by it alone.
  //   WAKING (2)       take() holds the slot, or (with REGISTERING) a wake arrived while a
  //                    registration held it; set by take(), cleared by whoever holds the slot.
  static constexpr std::uint32_t kWaiting = 0;
  static constexpr std::uint32_t kRegistering = 1;
  static constexpr std::uint32_t kWaking = 2;

  // Written by register_waker (CAS to REGISTERING, then back) and take (fetch_or/fetch_and
  // of WAKING); orderings are given at each access above. Pairings: the slot's holder
  // releases it with a release RMW (unlock_registering's CAS or exchange, take's fetch_and);
  // the next holder acquires it with its acquire RMW (register_waker's CAS, take's fetch_or).
  detail::Atomic<std::uint32_t> state_{kWaiting};
  // Guarded by the state lock: touched only by the thread that moved state_ out of WAITING.
  std::optional<Waker> waker_;
};

}  // namespace spool
