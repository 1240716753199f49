// PermitGuard and PermitLock: the guard and the lock future that Mutex and RwLock share —
// a Semaphore permit plus a pointer to the guarded value.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/sync/semaphore.hpp"

namespace spool::detail {

/// Access to a guarded `T` (const for shared access) while it holds its permits; releases
/// them when destroyed. `Tag::name` names the public type in error messages. Move only; a
/// moved-from or unlocked guard holds nothing: destroying it is a no-op, dereferencing or
/// unlocking it throws std::logic_error. It must not outlive its lock. Made by the locks.
template <class T, class Tag>
class PermitGuard {
 public:
  /// Holds `permit` (non-empty) for access to `*value`.
  PermitGuard(SemaphorePermit permit, T* value) noexcept
      : permit_(std::move(permit)), value_(value) {}
  PermitGuard(PermitGuard&&) noexcept = default;
  PermitGuard& operator=(PermitGuard&&) noexcept = default;

  /// The guarded value. Throws std::logic_error once the guard released its lock.
  T& operator*() const { return *get(); }
  /// The guarded value. Throws std::logic_error once the guard released its lock.
  T* operator->() const { return get(); }
  /// Releases the lock now. Throws std::logic_error when it already did (or was moved from).
  void unlock() {
    if (permit_.num_permits() == 0) throw_released("::unlock");
    permit_.release();
  }

 private:
  T* get() const {
    if (permit_.num_permits() == 0) throw_released("");
    return value_;
  }
  [[noreturn]] static void throw_released(const char* op) {
    throw std::logic_error(std::string(Tag::name) + op +
                           ": the guard already released its lock (unlocked, or moved from)");
  }

  SemaphorePermit permit_;
  T* value_;
};

/// The future of a lock: ready with a `Guard` (a PermitGuard) once its permits are assigned.
/// Cancellation and address stability are SemaphoreAcquire's: destroyed while waiting it
/// leaves the queue and passes on what was handed to it; moving it while it waits throws
/// std::logic_error.
template <class Guard, class T>
class PermitLock {
 public:
  /// Waits for the permits of `acquire`, then guards `*value`.
  PermitLock(SemaphoreAcquire acquire, T* value) : acquire_(std::move(acquire)), value_(value) {}

  /// Ready with the guard; pending while it waits in the queue.
  Poll<Guard> poll(Context& cx) {
    Poll<SemaphorePermit> p = acquire_.poll(cx);
    if (p.is_pending()) return pending;
    return Guard(std::move(p).value(), value_);
  }

 private:
  SemaphoreAcquire acquire_;
  T* value_;
};

}  // namespace spool::detail
