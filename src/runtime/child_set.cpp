// ChildSet's locking members (spool/detail/child_set.hpp): out of line, so that the rare
// path stays out of the join's inlined poll.
#include "spool/detail/child_set.hpp"

#include <mutex>

#include "runtime/root_waker.hpp"
#include "spool/detail/join.hpp"
#include "task/harness.hpp"  // pin_runtime_of

namespace spool::detail {

void ChildSet::keep_runtime_locked(const TaskHeader* child) noexcept {
  if (!runtime_) runtime_ = pin_runtime_of(child);
}

void ChildSet::record_error(std::exception_ptr error) noexcept {
  std::lock_guard guard(lock_);
  record_error_locked(std::move(error));
}

ChildSet::Seen ChildSet::watch(const Waker& waker, bool wait_all) {
  Waker old;  // dropped after the unlock
  std::lock_guard guard(lock_);
  wait_all_ = wait_all_ || wait_all;
  // Kept even when all exited: a scope's child spawned before its try_finish wakes it.
  keep_waiter_locked(waker, old);
  return Seen{exited_ == expected_, error_ != nullptr};
}

ChildSet::Seen ChildSet::watch_all(std::size_t expected, const Waker& waker) {
  Waker old;  // dropped after the unlock
  std::lock_guard guard(lock_);
  expected_ = expected;
  wait_all_ = true;
  const Seen seen{exited_ == expected_, error_ != nullptr};
  if (!seen.all_exited) keep_waiter_locked(waker, old);  // else the join finishes now
  return seen;
}

std::exception_ptr ChildSet::first_error() noexcept {
  std::lock_guard guard(lock_);
  return error_;
}

void ChildSet::wait_all_exited(std::optional<std::size_t> expected) noexcept {
  block_until(lock_, waiter_, [&] {
    if (expected) expected_ = *expected;
    wait_all_ = true;
    return exited_ == expected_;
  });
}

void ChildSet::keep_waiter_locked(const Waker& waker, Waker& old) {
  if (!waiter_.will_wake(waker)) old = std::exchange(waiter_, waker);
}

}  // namespace spool::detail
