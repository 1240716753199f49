// The waker of a TimerEntry, handed between the future that waits and the time driver.
//
// The slot is plain memory, guarded by ownership: while the entry is armed (linked in a
// wheel), by the shard's lock; otherwise the future's alone. Hence:
//  - the future's first poll stores its waker before arm links the entry (the lock's release
//    publishes it to the driver): no atomic RMW for the registration;
//  - a later poll of the armed entry swaps the waker under the lock, if it wakes another task;
//  - the driver takes the waker under the lock and only then stores kFired / kShutdown with
//    release: a future that reads that state (acquire) owns the entry again, slot included.
// tests/model/timer_entry_model.cpp checks the protocol (and that each ordering matters).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "spool/detail/timer_entry.hpp"

namespace spool::detail {

/// The entry's state as the future (or disarm) reads it without the lock. Acquire: pairs with
/// settle_locked's release, so a future that reads kFired / kShutdown owns the entry again
/// and may free it.
inline std::uint32_t state_of(const TimerEntry& e) noexcept {
  return e.state.load(std::memory_order_acquire);
}

/// The future, its entry in no wheel: keeps (a clone of) `w` unless it wakes the same task.
inline void set_waker_unshared(TimerEntry& e, const Waker& w) {
  if (!e.waker || !e.waker->will_wake(w)) e.waker = w;
}

/// The future, its entry armed in the wheel `lock` guards: the same under `lock`. Returns the
/// state it found: kArmed, or kFired / kShutdown when the driver took the entry out first.
template <class Lock>
std::uint32_t update_waker(Lock& lock, TimerEntry& e, const Waker& w) {
  {
    std::lock_guard guard(lock);
    // Unlinked under this lock by the driver, which stored the state before unlocking.
    if (!e.linked) return e.state.load(std::memory_order_relaxed);
    if (e.waker && e.waker->will_wake(w)) return TimerEntry::kArmed;
  }
  Waker fresh = w;  // cloned without the lock: a waker's clone is foreign code
  std::optional<Waker> old;
  {
    std::lock_guard guard(lock);
    if (!e.linked) return e.state.load(std::memory_order_relaxed);
    old = std::exchange(e.waker, std::move(fresh));
  }
  return TimerEntry::kArmed;  // the old waker is dropped without the lock
}

/// The driver, under the shard's lock, `e` just unlinked: moves it to `state` (kFired or
/// kShutdown) and returns its waker, to be woken once the lock is released.
inline std::optional<Waker> settle_locked(TimerEntry& e, std::uint32_t state) noexcept {
  std::optional<Waker> w = std::exchange(e.waker, std::nullopt);
  // Release: pairs with the future's acquire loads (Sleep::poll, disarm): the unlink and
  // the emptied slot are visible to a future that sees the state.
  e.state.store(state, std::memory_order_release);
  return w;
}

}  // namespace spool::detail
