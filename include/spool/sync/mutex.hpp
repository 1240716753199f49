// spool::Mutex<T>: a fair async mutex (FIFO hand-off) guarding a T, on a one-permit Semaphore.
#pragma once

#include <optional>
#include <utility>

#include "spool/detail/fatal_misuse.hpp"
#include "spool/detail/permit_guard.hpp"
#include "spool/sync/semaphore.hpp"

namespace spool {

namespace detail {
/// Names MutexGuard in its error messages.
struct MutexGuardName {
  static constexpr const char* name = "spool::MutexGuard";
};
}  // namespace detail

/// Exclusive access to a Mutex's value while it lives (`*guard`, `guard->`); destroying it
/// unlocks (the lock then passes to the first waiter, if any). `unlock()` unlocks early.
/// Move only; a moved-from or unlocked guard holds nothing: destroying it is a no-op,
/// dereferencing it or unlocking it again throws std::logic_error. It must not outlive its
/// Mutex. Not thread-safe itself, but it may be moved to and destroyed on another thread.
template <class T>
using MutexGuard = detail::PermitGuard<T, detail::MutexGuardName>;

/// The future of Mutex::lock: ready with a MutexGuard once the lock is handed to it.
/// Cancellation: destroyed while it waits, it leaves the queue; if the lock had already been
/// handed to it, the lock passes on to the next waiter. Movable until first polled; moving
/// it while it waits throws std::logic_error.
template <class T>
using MutexLock = detail::PermitLock<MutexGuard<T>, T>;

/// An async mutex guarding a T. Fair: waiters get the lock in the order they first polled
/// their lock future, and an unlock hands the lock directly to the first waiter (a task that
/// unlocks and locks again queues behind the others). Uncontended, lock and unlock are one
/// CAS each. Thread-safe; works under any executor. Not movable; it must outlive its guards
/// and lock futures (destroying it while locked, or while a lock future waits, aborts the
/// process with a message: their release would write freed memory).
template <class T>
class Mutex {
 public:
  /// A mutex guarding T(args...).
  template <class... Args>
  explicit Mutex(Args&&... args) : value_(std::forward<Args>(args)...) {}
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  /// Aborts with a message if a guard or a waiting lock future is left (see the class).
  ~Mutex() {
    if (sem_.available_permits() != 1) {
      detail::fatal_misuse(
          "spool::Mutex destroyed while it is locked or a lock() future waits for it: keep the "
          "mutex alive until every guard and lock future is gone");
    }
  }

  /// A future of the lock: `auto guard = co_await m.lock();`.
  [[nodiscard]] MutexLock<T> lock() { return MutexLock<T>(sem_.acquire(1), &value_); }
  /// The lock now if it is free and nobody waits for it, else nullopt.
  [[nodiscard]] std::optional<MutexGuard<T>> try_lock() {
    std::optional<SemaphorePermit> p = sem_.try_acquire(1);
    if (!p) return std::nullopt;
    return MutexGuard<T>(std::move(*p), &value_);
  }

 private:
  Semaphore sem_{1};
  T value_;
};

}  // namespace spool
