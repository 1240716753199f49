// spool::Semaphore: the lock-free fast paths' slow halves — the waiter queue, hand-off,
// cancellation and close. docs/sync.md explains the protocol.
#include "spool/sync/semaphore.hpp"

#include <mutex>
#include <string>

#include "spool/coop.hpp"
#include "spool/detail/wake_list.hpp"

namespace spool {

namespace {

using detail::AcquireWaiter;

}  // namespace

Semaphore::Semaphore(std::size_t permits) : state_(0) {
  if (permits > max_permits) {
    throw std::invalid_argument("spool::Semaphore(" + std::to_string(permits) +
                                "): more permits than spool::Semaphore::max_permits");
  }
  state_.store(permits << kShift, std::memory_order_relaxed);
}

void Semaphore::throw_too_many(const char* op, std::size_t n) {
  throw std::invalid_argument(std::string("spool::Semaphore::") + op + "(" + std::to_string(n) +
                              "): more permits than spool::Semaphore::max_permits");
}

std::optional<SemaphorePermit> Semaphore::try_acquire(std::size_t n) {
  if (n > max_permits) throw_too_many("try_acquire", n);
  switch (try_take(n)) {
    case Take::kTaken:
      return SemaphorePermit(this, n);
    case Take::kClosed:
      throw AcquireError();
    case Take::kShort:
      break;
  }
  return std::nullopt;
}

// Hands `n` permits to the waiters at the head of the queue (each is fully served before the
// next gets any: FIFO), then, when none is left waiting, clears kWaiters and makes the rest
// available. Called with `lock` held; releases and retakes it to wake a full batch. Leaves
// the lock held and the last batch in `wakes`.
void Semaphore::assign_locked(std::size_t n, Lock& lock, detail::WakeList& wakes) noexcept {
  while (!waiters_.empty()) {
    auto& node = static_cast<AcquireWaiter&>(*waiters_.front());
    const std::size_t need = node.remaining.load(std::memory_order_relaxed);
    if (need > n) {
      node.remaining.store(need - n, std::memory_order_relaxed);
      return;  // still waiting: kWaiters stays, 0 available
    }
    n -= need;
    waiters_.complete(node, wakes);
    // Release: the owner's acquire load sees its permits and the emptied node; from here on
    // the node may be gone.
    node.remaining.store(0, std::memory_order_release);
    wakes.flush_if_full(lock);
  }
  std::size_t cur = state_.load(std::memory_order_relaxed);
  // Release: publishes what the releaser wrote to the next lock-free acquirer. Only close()
  // (kClosed) and lock-free acquires/releases (only while kWaiters is clear) race with it.
  while (!state_.compare_exchange_weak(cur, with_permits(cur & ~kWaiters, n),
                                       std::memory_order_release, std::memory_order_relaxed)) {
  }
}

void Semaphore::release_slow(std::size_t n) noexcept {
  detail::WakeList wakes;
  Lock lock(lock_);
  assign_locked(n, lock, wakes);
  lock.unlock();
}  // wakes: woken here, outside the lock

void Semaphore::throw_add_overflow(std::size_t n) {
  throw std::overflow_error("spool::Semaphore::add_permits(" + std::to_string(n) +
                            "): the available permits would exceed spool::Semaphore::max_permits");
}

Poll<SemaphorePermit> Semaphore::enqueue(SemaphoreAcquire& a, const Waker& waker) {
  AcquireWaiter& node = a.node_;
  Lock lock(lock_);
  std::size_t cur = state_.load(std::memory_order_acquire);
  std::size_t need = a.n_;
  for (;;) {
    if ((cur & kClosed) != 0) return a.finish_closed();
    const std::size_t available = cur >> kShift;
    if (available >= need) {
      // Acquire: as try_take (the permits were released lock-free, or became available
      // when the last waiter left).
      if (state_.compare_exchange_weak(cur, cur - (need << kShift), std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return a.finish();
      }
    } else {
      // Take what there is and wait at the back for the rest. Already marked (others wait,
      // nothing is available): no RMW needed, the lock orders us behind them.
      const std::size_t marked = (cur & kClosed) | kWaiters;
      if (cur == marked || state_.compare_exchange_weak(cur, marked, std::memory_order_acquire,
                                                        std::memory_order_relaxed)) {
        need -= available;
        break;
      }
    }
  }
  node.requested = a.n_;
  node.remaining.store(need, std::memory_order_relaxed);
  try {
    waiters_.push_back(node, waker);
  } catch (...) {
    // Cloning the waker failed: give back what was taken (and clear kWaiters if alone).
    detail::WakeList wakes;
    assign_locked(a.n_ - need, lock, wakes);
    lock.unlock();
    throw;
  }
  a.state_ = SemaphoreAcquire::State::kWaiting;
  return pending;
}

Poll<SemaphorePermit> Semaphore::repoll(SemaphoreAcquire& a, const Waker& waker) {
  if (detail::WaiterList::refresh_if_linked(lock_, a.node_, waker)) return pending;
  // Completed between the caller's load and the lock.
  if (a.node_.remaining.load(std::memory_order_acquire) == AcquireWaiter::kClosed) {
    return a.finish_closed();
  }
  return a.finish();
}

void Semaphore::cancel(AcquireWaiter& node) noexcept {
  std::size_t give_back = 0;
  detail::WakeList wakes;
  Waker old;  // the node's waker, dropped after the lock
  {
    Lock lock(lock_);
    const std::size_t remaining = node.remaining.load(std::memory_order_relaxed);
    if (node.linked()) {
      waiters_.remove(node);
      old = node.take_waker();
      give_back = node.requested - remaining;  // what it had collected; 0 still clears kWaiters
    } else if (remaining == 0) {
      give_back = node.requested;  // granted, never polled again: pass it all on
    } else {
      return;  // closed: close() gave back what it had
    }
    assign_locked(give_back, lock, wakes);
  }
}

void Semaphore::close() {
  // AcqRel: later lock-free acquires see it (they never take permits again).
  state_.fetch_or(kClosed, std::memory_order_acq_rel);
  detail::WakeList wakes;
  std::size_t give_back = 0;  // what the failed waiters had collected
  Lock lock(lock_);
  while (!waiters_.empty()) {
    auto& node = static_cast<AcquireWaiter&>(*waiters_.front());
    give_back += node.requested - node.remaining.load(std::memory_order_relaxed);
    waiters_.complete(node, wakes);
    // Release: the owner's acquire load sees kClosed; from here on the node may be gone.
    node.remaining.store(AcquireWaiter::kClosed, std::memory_order_release);
    wakes.flush_if_full(lock);
  }
  assign_locked(give_back, lock, wakes);
  lock.unlock();
}

// --- SemaphoreAcquire ---

Poll<SemaphorePermit> SemaphoreAcquire::poll_slow(Context& cx) {
  if (state_ == State::kDone) {
    throw std::logic_error(
        "spool::SemaphoreAcquire polled after it completed (or after it was moved from)");
  }
  if (!detail::coop_poll_proceed(cx)) return pending;
  // Waiting. Acquire: pairs with the release store of whoever completed the node.
  const std::size_t remaining = node_.remaining.load(std::memory_order_acquire);
  if (remaining == 0) return finish();
  if (remaining == detail::AcquireWaiter::kClosed) return finish_closed();
  return sem_->repoll(*this, cx.waker());
}

}  // namespace spool
