// spool::Notify and spool::Notified: the permit word, the waiter queue, notify_waiters'
// generations and the hand-on of a notify_one whose waiter was cancelled. docs/sync.md.
#include "spool/sync/notify.hpp"

#include <mutex>
#include <stdexcept>

#include "spool/coop.hpp"
#include "spool/detail/wake_list.hpp"

namespace spool {

namespace {
using detail::NotifyWaiter;
using Lock = std::unique_lock<detail::Mutex>;
}  // namespace

Notified Notify::notified() noexcept {
  // Acquire: pairs with notify_waiters' increment (made under the lock).
  return Notified(this, state_.load(std::memory_order_acquire) >> kShift);
}

bool Notify::take_permit(std::size_t cur) noexcept {
  while ((cur & kStateMask) == kNotified) {
    // Acquire: pairs with notify_one's release CAS that stored the permit.
    if (state_.compare_exchange_weak(cur, (cur & ~kStateMask) | kEmpty, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

void Notify::notify_one() {
  std::size_t cur = state_.load(std::memory_order_acquire);
  while ((cur & kStateMask) != kHasWaiters) {
    // Release: the consumer's acquire CAS sees what was written before notify_one.
    if (state_.compare_exchange_weak(cur, (cur & ~kStateMask) | kNotified,
                                     std::memory_order_release, std::memory_order_acquire)) {
      return;
    }
  }
  detail::WakeList wakes;
  Lock lock(lock_);
  if (waiters_.empty()) {
    // The last waiter left (cancelled) between the load and the lock: store the permit.
    cur = state_.load(std::memory_order_relaxed);
    while (!state_.compare_exchange_weak(cur, (cur & ~kStateMask) | kNotified,
                                         std::memory_order_release, std::memory_order_relaxed)) {
    }
    return;
  }
  auto& node = static_cast<NotifyWaiter&>(*waiters_.front());
  waiters_.complete(node, wakes);
  // Release: the owner's acquire load sees it; from here on the node may be gone.
  node.notified.store(NotifyWaiter::kOne, std::memory_order_release);
  leave_waiting_locked();
  lock.unlock();
}  // wakes: woken here, outside the lock

void Notify::notify_waiters() {
  detail::WakeList wakes;
  Lock lock(lock_);
  // AcqRel: the count is what notified() acquires; futures made from now on have the new
  // generation and are not woken by this call.
  const std::size_t generation =
      (state_.fetch_add(std::size_t{1} << kShift, std::memory_order_acq_rel) >> kShift) + 1;
  // Waiters that were linked before this call have an older generation; the batches drop the
  // lock, and a future made after the call may link itself meanwhile (at the back).
  while (!waiters_.empty()) {
    auto& node = static_cast<NotifyWaiter&>(*waiters_.front());
    if (node.generation >= generation) break;
    waiters_.complete(node, wakes);
    // Release: as in notify_one.
    node.notified.store(NotifyWaiter::kAll, std::memory_order_release);
    wakes.flush_if_full(lock);
  }
  leave_waiting_locked();
  lock.unlock();
}

Poll<void> Notify::enqueue(Notified& n, const Waker& waker) {
  Lock lock(lock_);
  std::size_t cur = state_.load(std::memory_order_acquire);
  for (;;) {
    if ((cur >> kShift) != n.generation_ || take_permit(cur)) {
      n.state_ = Notified::State::kDone;  // notify_waiters since it was made, or the permit
      return Poll<void>::ready();
    }
    cur = state_.load(std::memory_order_acquire);
    if ((cur & kStateMask) == kHasWaiters) break;
    // kEmpty -> kHasWaiters. Fails when a lock-free notify_one stored a permit meanwhile: the
    // loop then takes it.
    if ((cur & kStateMask) == kEmpty &&
        state_.compare_exchange_strong(cur, cur | kHasWaiters, std::memory_order_acquire,
                                       std::memory_order_acquire)) {
      break;
    }
  }
  n.node_.generation = n.generation_;
  try {
    waiters_.push_back(n.node_, waker);
  } catch (...) {
    leave_waiting_locked();
    throw;
  }
  n.state_ = Notified::State::kWaiting;
  return pending;
}

void Notify::leave_waiting_locked() noexcept {
  if (!waiters_.empty()) return;
  const std::size_t cur = state_.load(std::memory_order_relaxed);
  // Under the lock nothing else moves the state out of kHasWaiters (lock-free notify_one and
  // permit takers act only on kEmpty / kNotified).
  if ((cur & kStateMask) == kHasWaiters) state_.store(cur & ~kStateMask, std::memory_order_release);
}

Poll<void> Notify::repoll(Notified& n, const Waker& waker) {
  if (detail::WaiterList::refresh_if_linked(lock_, n.node_, waker)) return pending;
  n.state_ = Notified::State::kDone;  // notified between the caller's load and the lock
  return Poll<void>::ready();
}

void Notify::cancel(Notified& n) noexcept {
  Waker old;  // the node's waker, dropped after the lock
  {
    std::lock_guard<detail::Mutex> lock(lock_);
    if (n.node_.linked()) {
      waiters_.remove(n.node_);
      old = n.node_.take_waker();
      leave_waiting_locked();
      return;
    }
  }
  // Unlinked by a notifier. Acquire: pairs with its release store.
  if (n.node_.notified.load(std::memory_order_acquire) == NotifyWaiter::kOne) notify_one();
}

// --- Notified ---

Notified::Notified(Notified&& o) : notify_(o.notify_), generation_(o.generation_) {
  if (o.state_ == State::kWaiting) detail::throw_moved_while_waiting("spool::Notified");
  state_ = o.state_;
  o.state_ = State::kDone;  // the moved-from future holds nothing
}

Notified::~Notified() {
  if (state_ == State::kWaiting) notify_->cancel(*this);
}

Poll<void> Notified::poll(Context& cx) {
  if (state_ == State::kDone) {
    throw std::logic_error(
        "spool::Notified polled after it completed (or after it was moved from)");
  }
  if (!detail::coop_poll_proceed(cx)) return pending;
  if (state_ == State::kIdle) {
    // Lock-free first: a notify_waiters since creation, or a stored permit.
    const std::size_t cur = notify_->state_.load(std::memory_order_acquire);
    if ((cur >> Notify::kShift) != generation_ || notify_->take_permit(cur)) {
      state_ = State::kDone;
      return Poll<void>::ready();
    }
    return notify_->enqueue(*this, cx.waker());
  }
  // Waiting. Acquire: pairs with the notifier's release store.
  if (node_.notified.load(std::memory_order_acquire) != NotifyWaiter::kWaiting) {
    state_ = State::kDone;
    return Poll<void>::ready();
  }
  return notify_->repoll(*this, cx.waker());
}

}  // namespace spool
