// ChildSet: the books that spool::join (its stolen children) and spool::scope keep of a
// parent's children that run as runtime tasks of their own. What locks is implemented in
// src/runtime/child_set.cpp (out of the join's inlined poll).
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <utility>

#include "spool/core/waker.hpp"
#include "spool/detail/spin_lock.hpp"

namespace spool::detail {

class TaskHeader;

// How many children the parent waits for and how many exited, the first exception, and the
// parent's waker: woken by the first exception, and by the last exit once the parent waits
// for every child (wait_all). Guarded by lock(), which the owner (ForkRemote, Scope) also
// takes for its own record of the children; no user code runs under it (the `to_wake`
// wakers are woken, and old ones dropped, after the unlock). The unlock after a child's
// exit is counted is that child's last touch of its parent: a parent that then sees every
// child out may free it. libspool.so exports the members public inline code calls (SPOOL_API).
class ChildSet {
 public:
  // What the parent sees of its children.
  struct Seen {
    bool all_exited;  // every child it expects exited
    bool failed;      // an exception was recorded
  };

  ChildSet() = default;
  ChildSet(const ChildSet&) = delete;
  ChildSet& operator=(const ChildSet&) = delete;

  SpinLock& lock() noexcept { return lock_; }

  // With lock() held:
  // One more child to wait for (a scope's spawn).
  void add_expected_locked() noexcept { ++expected_; }
  // From now on the last exit wakes the waiter.
  void wait_all_locked() noexcept { wait_all_ = true; }
  bool all_exited_locked() const noexcept { return exited_ == expected_; }
  // One child exited: hands over the waiter to wake if it was the last and wait_all.
  void count_exit_locked(Waker& to_wake) noexcept {
    if (++exited_ == expected_ && wait_all_) to_wake = std::exchange(waiter_, Waker());
  }
  // Takes `error` unless an earlier one was recorded (then it is left to the caller, to be
  // dropped after the unlock: the last reference runs a user destructor); true if it was
  // the first.
  bool record_error_locked(std::exception_ptr&& error) noexcept {
    if (error_) return false;
    error_ = std::move(error);
    return true;
  }
  // The same, and then copies the waiter into `to_wake` (the last exit may still need it).
  bool record_error_locked(std::exception_ptr&& error, Waker& to_wake) noexcept {
    if (!record_error_locked(std::move(error))) return false;
    to_wake = waiter_;
    return true;
  }
  Waker take_waiter_locked() noexcept { return std::exchange(waiter_, Waker()); }
  // Keeps the runtime of `child` (a task just attached, on one of its runtime's threads)
  // alive while the set lives: a parent dropped on any thread cancels its children there
  // (join_cancel_now), which touches their scheduler, and a runtime's shutdown does not
  // wait for such a thread.
  void keep_runtime_locked(const TaskHeader* child) noexcept;
  std::exception_ptr take_error_locked() noexcept { return std::exchange(error_, nullptr); }

  // Records `error` unless an earlier one was recorded; wakes no one (the parent's own).
  SPOOL_API void record_error(std::exception_ptr error) noexcept;
  // Keeps `waker`; with `wait_all`, from now on the last exit wakes it.
  SPOOL_API Seen watch(const Waker& waker, bool wait_all);
  // watch(waker, true), expecting `expected` children (a join's stolen ones); the waker is
  // not kept once they all exited.
  SPOOL_API Seen watch_all(std::size_t expected, const Waker& waker);
  // The first exception recorded, or null.
  SPOOL_API std::exception_ptr first_error() noexcept;
  // Blocks the thread until every expected child exited (`expected`, if given, replaces
  // the count): the parent goes before it finished, and its children may borrow what it
  // is about to free.
  void wait_all_exited(std::optional<std::size_t> expected) noexcept;

 private:
  // With lock_ held: keeps `waker` as the waiter, the one it replaces moved to `old`.
  void keep_waiter_locked(const Waker& waker, Waker& old);

  SpinLock lock_;
  // All guarded by lock_:
  bool wait_all_ = false;  // the parent waits for every child: the last exit wakes it
  std::size_t exited_ = 0;
  std::size_t expected_ = 0;
  Waker waiter_;  // the parent's waker (or the blocking wait's); noop when none
  std::exception_ptr error_;
  std::shared_ptr<void> runtime_;  // the children's runtime (keep_runtime_locked)
};

}  // namespace spool::detail
