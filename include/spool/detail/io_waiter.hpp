// IoWaiter: one leaf I/O future's place among the tasks waiting on one direction of a socket.
#pragma once

#include <cstdint>

#include "spool/detail/waiter_list.hpp"

namespace spool::detail {

class ScheduledIo;

/// The waiting state of one socket operation (a read, a write, an accept...), kept in its
/// future. Any number of tasks may wait on one direction of one socket at once, and each is
/// woken by the next readiness edge (tokio keeps a list of waiters too). The first waiter
/// of a direction owns that direction's AtomicWaker, the lock-free path; while it waits,
/// the others queue in a WaiterList under a lock (src/driver/io/scheduled_io.hpp has the
/// protocol). The future gives up its place when it completes, is dropped, or its socket
/// closes.
///
/// A moved future starts afresh (a new IoWaiter): the moved-from one keeps its place until
/// it is destroyed, so the moved future may be polled again at once. Not thread-safe: the
/// future's poller and the socket's driver use it as ScheduledIo describes.
class SPOOL_API IoWaiter : public WaiterNode {
 public:
  /// Not waiting.
  IoWaiter() = default;
  /// A fresh waiter (the moved-from one keeps its place until destroyed).
  IoWaiter(IoWaiter&& /*moved_from*/) noexcept : IoWaiter() {}
  /// Gives up this waiter's place, as its destruction would: the future assigned here may
  /// wait on another socket.
  IoWaiter& operator=(IoWaiter&& /*other*/) noexcept {
    if (io_ != nullptr) leave_slow(true);
    return *this;
  }
  /// Gives up its place; if it owned its direction's AtomicWaker, drops the waker there.
  ~IoWaiter() {
    if (io_ != nullptr) leave_slow(true);
  }

  /// Gives up its place, if it has one: the operation completed.
  void leave() noexcept {
    if (io_ != nullptr) leave_slow(false);
  }

 private:
  friend class ScheduledIo;
  // How it waits: as the owner of the direction's AtomicWaker, or in its queue.
  enum class Role : unsigned char { kNone, kOwner, kQueued };

  void leave_slow(bool cancel) noexcept;  // src/net/io_source.cpp

  // Where it waits: set by its poller when it first waits (with role_), cleared when it
  // leaves, or by the socket's close (ScheduledIo::detach_waiters) — which the user orders
  // before any later use of the future, as for every other use of a closed socket.
  ScheduledIo* io_ = nullptr;
  Role role_ = Role::kNone;
  bool read_ = false;  // the direction waited for
  // Guarded by the direction's lock: linked in its `woken` list (its waker was taken by a
  // wake, and its next poll moves it back to `waiting`) rather than in `waiting`.
  bool woken_ = false;
  // Guarded by the direction's lock: the direction's wake epoch when it last queued.
  std::uint32_t epoch_ = 0;
};

}  // namespace spool::detail
