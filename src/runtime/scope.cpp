// spool::Scope: the children's bookkeeping, and the wait of a scope destroyed early.
//
// The protocol (docs/scope.md). Everything below is guarded by the lock of the scope's
// ChildSet (its books: children expected and exited, first exception, waiter); no user code
// runs under it (aborting a child only queues it; a child's own JoinHandle is dropped before
// it completes, which never destroys a frame).
//  - spawn: reserve() a slot (the child is expected from now on), spawn the child's
//    runtime task, attach() its JoinHandle to the slot. The child may exit before that: its
//    slot then says so and attach() frees it.
//  - A child exits (ScopeChild::exit, after its Task was destroyed): counted out, its
//    handle dropped, its exception recorded if it is the first (then every other child is
//    aborted), and the waiter woken if that is news to it. That unlock is the child's last
//    touch of the scope: a waiter that then sees no child left may free it.
//  - close() (the future destroyed early): takes every handle out, cancels each child on
//    the spot (join_cancel_now: an idle or queued child's frame is destroyed here; a child
//    being polled elsewhere is cancelled by its poller when the poll ends), then blocks until
//    no child is left. On a current-thread runtime, when this runs on the thread that drives
//    it, no child can be in a poll, so it never blocks there (docs/scope.md).
#include "spool/scope.hpp"

#include <cassert>
#include <memory>
#include <mutex>
#include <utility>

#include "spool/detail/join.hpp"
#include "task/harness.hpp"  // join_cancel_now

namespace spool {

namespace detail {

void ScopeChild::exit(std::exception_ptr error) noexcept {
  if (scope_ == nullptr) return;
  task_ = Task<void>();  // the child's frame goes before the scope may let its awaiter go on
  std::exchange(scope_, nullptr)->child_exited(slot_, std::move(error));
}

Task<void> run_scope_child(ScopeChild child) {
  std::exception_ptr error;
  try {
    if (child.locals() == nullptr) {
      co_await child.task();
    } else {  // polled inside its scope's task-local values (a leaf, not joined to this chain)
      co_await WithTaskLocals(child.locals(), child.task());
    }
  } catch (...) {
    error = std::current_exception();
  }
  child.exit(std::move(error));
}

}  // namespace detail

detail::RuntimeShared& Scope::runtime_for_spawn() {
  detail::RuntimeShared* rt = detail::current_runtime_ptr();
  if (rt == nullptr) {
    throw std::logic_error(
        "spool::Scope::spawn outside a runtime: a scope's children are runtime tasks; await "
        "the scope inside a task or Runtime::block_on");
  }
  return *rt;
}

std::size_t Scope::reserve() {
  std::lock_guard lock(children_.lock());
  if (phase_ == Phase::kFinished) {
    throw std::logic_error(
        "spool::Scope::spawn after the scope finished: the Scope& escaped its body, and no "
        "one would wait for the child; spawn from the body or from the scope's children");
  }
  if (phase_ != Phase::kOpen) return kNoSlot;
  std::size_t slot;
  if (free_.empty()) {
    slot = slots_.size();
    slots_.emplace_back();
    free_.reserve(slots_.capacity());  // so that freeing a slot never allocates
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  children_.add_expected_locked();
  return slot;
}

void Scope::attach(std::size_t slot, JoinHandle<void> handle) noexcept {
  {
    std::lock_guard lock(children_.lock());
    if (phase_ != Phase::kClosed) {
      Slot& s = slots_[slot];
      if (s.exited) {
        s.exited = false;
        free_.push_back(slot);
        return;  // `handle` is dropped after the unlock
      }
      children_.keep_runtime_locked(detail::JoinHandleAccess::task_of(handle));
      s.handle.emplace(std::move(handle));
      if (phase_ == Phase::kCancelling) s.handle->abort();
      return;
    }
  }
  // close() took the handles before this one arrived, and waits for this child too.
  detail::join_cancel_now(detail::JoinHandleAccess::task_of(handle));
}

void Scope::abandon(std::size_t slot) noexcept {
  std::lock_guard lock(children_.lock());
  if (phase_ == Phase::kClosed) return;
  assert(slots_[slot].exited);
  slots_[slot].exited = false;
  free_.push_back(slot);
}

void Scope::child_exited(std::size_t slot, std::exception_ptr error) noexcept {
  Waker to_wake;
  {
    std::lock_guard lock(children_.lock());
    if (error && phase_ == Phase::kOpen) {
      children_.record_error_locked(std::move(error), to_wake);
      cancel_locked();
    }
    children_.count_exit_locked(to_wake);
    if (phase_ != Phase::kClosed) {  // closed: the slots were taken
      Slot& s = slots_[slot];
      if (s.handle) {
        s.handle.reset();  // not complete yet: only drops the handle's reference
        free_.push_back(slot);
      } else {
        s.exited = true;  // its spawner frees the slot in attach() or abandon()
      }
    }
  }
  std::move(to_wake).wake();
}

void Scope::fail(std::exception_ptr error) noexcept {
  std::lock_guard lock(children_.lock());
  if (phase_ != Phase::kOpen) return;  // not the first: dropped
  children_.record_error_locked(std::move(error));
  cancel_locked();
}

void Scope::cancel_locked() noexcept {
  phase_ = Phase::kCancelling;
  children_.wait_all_locked();  // the future polls the body no more
  for (Slot& s : slots_) {
    if (s.handle) s.handle->abort();  // only queues the child
  }
}

std::optional<std::exception_ptr> Scope::try_finish() noexcept {
  Waker old;  // dropped after the unlock
  std::lock_guard lock(children_.lock());
  if (!children_.all_exited_locked()) return std::nullopt;
  phase_ = Phase::kFinished;
  old = children_.take_waiter_locked();
  return children_.take_error_locked();
}

void Scope::close() noexcept {
  std::vector<Slot> taken;
  Waker old;
  {
    std::lock_guard lock(children_.lock());
    if (phase_ == Phase::kFinished) return;  // no child is left
    phase_ = Phase::kClosed;
    taken.swap(slots_);
    old = children_.take_waiter_locked();
  }
  for (Slot& s : taken) {
    if (s.handle) detail::join_cancel_now(detail::JoinHandleAccess::task_of(*s.handle));
  }
  taken.clear();
  children_.wait_all_exited(std::nullopt);  // the last child exits
}

}  // namespace spool
