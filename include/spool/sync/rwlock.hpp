// spool::RwLock<T>: an async reader-writer lock, writer-preferring, on a Semaphore.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>

#include "spool/detail/fatal_misuse.hpp"
#include "spool/detail/permit_guard.hpp"
#include "spool/sync/semaphore.hpp"

namespace spool {

namespace detail {
/// Names RwLockReadGuard in its error messages.
struct RwLockReadGuardName {
  static constexpr const char* name = "spool::RwLockReadGuard";
};
/// Names RwLockWriteGuard in its error messages.
struct RwLockWriteGuardName {
  static constexpr const char* name = "spool::RwLockWriteGuard";
};
}  // namespace detail

/// Shared (const) access to an RwLock's value while it lives; the rules of MutexGuard.
template <class T>
using RwLockReadGuard = detail::PermitGuard<const T, detail::RwLockReadGuardName>;
/// Exclusive access to an RwLock's value while it lives; the rules of MutexGuard.
template <class T>
using RwLockWriteGuard = detail::PermitGuard<T, detail::RwLockWriteGuardName>;

/// The future of RwLock::read: ready with a read guard. Cancellation and address stability
/// as MutexLock's.
template <class T>
using RwLockRead = detail::PermitLock<RwLockReadGuard<T>, const T>;
/// The future of RwLock::write: ready with a write guard. Cancellation and address
/// stability as MutexLock's: a writer destroyed while it waits gives the read permits it
/// had collected to the waiters behind it.
template <class T>
using RwLockWrite = detail::PermitLock<RwLockWriteGuard<T>, T>;

/// An async reader-writer lock guarding a T: up to kMaxReaders readers at once, or one
/// writer. Built on a Semaphore of kMaxReaders permits (as tokio's): a reader takes one, a
/// writer all of them. The queue is FIFO and a waiting writer collects the permits readers
/// return, so readers that come after a waiting writer wait behind it: writers are never
/// starved by a stream of readers (writer-preferring), and readers queued behind a writer
/// get the lock, together, once it unlocks. Thread-safe; works under any executor. Not
/// movable; it must outlive its guards and lock futures (destroying it while one is left
/// aborts the process with a message: their release would write freed memory).
template <class T>
class RwLock {
 public:
  /// The most readers at once (tokio's MAX_READS).
  static constexpr std::size_t kMaxReaders = 0xffff'ffffU >> 3;

  /// An RwLock guarding T(args...).
  template <class... Args>
  explicit RwLock(Args&&... args) : value_(std::forward<Args>(args)...) {}
  RwLock(const RwLock&) = delete;
  RwLock& operator=(const RwLock&) = delete;
  /// Aborts with a message if a guard or a waiting lock future is left (see the class).
  ~RwLock() {
    if (sem_.available_permits() != kMaxReaders) {
      detail::fatal_misuse(
          "spool::RwLock destroyed while it is read- or write-locked, or a read() / write() "
          "future waits for it: keep the lock alive until every guard and lock future is gone");
    }
  }

  /// A future of shared access: `auto r = co_await lock.read();`.
  [[nodiscard]] RwLockRead<T> read() { return RwLockRead<T>(sem_.acquire(1), &value_); }
  /// A future of exclusive access: `auto w = co_await lock.write();`.
  [[nodiscard]] RwLockWrite<T> write() {
    return RwLockWrite<T>(sem_.acquire(kMaxReaders), &value_);
  }
  /// Shared access now if no writer holds or waits for the lock, else nullopt.
  [[nodiscard]] std::optional<RwLockReadGuard<T>> try_read() {
    return try_lock<RwLockReadGuard<T>>(1);
  }
  /// Exclusive access now if nobody holds or waits for the lock, else nullopt.
  [[nodiscard]] std::optional<RwLockWriteGuard<T>> try_write() {
    return try_lock<RwLockWriteGuard<T>>(kMaxReaders);
  }

 private:
  template <class Guard>
  std::optional<Guard> try_lock(std::size_t permits) {
    std::optional<SemaphorePermit> p = sem_.try_acquire(permits);
    if (!p) return std::nullopt;
    return Guard(std::move(*p), &value_);
  }

  Semaphore sem_{kMaxReaders};
  T value_;
};

}  // namespace spool
