// MpscChan: the state an mpsc channel's senders and its receiver share.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/mpsc_ring.hpp"
#include "spool/detail/spin_lock.hpp"
#include "spool/sync/semaphore.hpp"

namespace spool::detail {

/// The shared state of one mpsc channel: the queue (a ring of `capacity` slots guarded by a
/// Semaphore of as many permits when bounded, a locked list when unbounded), the count of
/// live senders, and the receiver's waker. A sender owns a capacity permit before it pushes
/// (bounded); the receiver returns one permit per slot it consumes.
///
/// Waking the receiver costs a sender no read-modify-write or fence of its own while the
/// receiver is busy. The receiver that found the queue empty registers its waker, raises
/// `rx_parked_` with a seq_cst exchange and looks at the queue again; a sender loads
/// `rx_parked_` (seq_cst) after it stored its value, and wakes the receiver if it is set.
/// What makes the two sides meet (no lost wake-up):
///  - bounded: the sender's reservation of its slot is a seq_cst read-modify-write of the
///    ring's tail, which the receiver reads (seq_cst) after its exchange. Either the
///    receiver sees the reservation — then it waits the few instructions until the value is
///    published instead of parking — or the reservation comes after the exchange in the
///    single total order, and so does the sender's load, which then sees `rx_parked_`.
///  - unbounded: the list's lock orders the two critical sections: if the receiver's pop
///    comes first, the sender's load (after its own lock) happens after the receiver raised
///    the flag; otherwise the pop sees the value.
/// The receiver pays the exchange only when it parks.
template <class T>
class MpscChan {
 public:
  /// A bounded channel of `capacity` (≥ 1) slots, or an unbounded one (nullopt).
  explicit MpscChan(std::optional<std::size_t> capacity) : capacity_(capacity.value_or(0)) {
    if (capacity) {
      ring_.emplace(*capacity);
      permits_.emplace(*capacity);
    }
  }

  /// The capacity semaphore (bounded channels only).
  Semaphore& permits() noexcept { return *permits_; }

  // --- senders ---

  /// Bounded: stores `value` in the ring (the caller has given up one capacity permit for
  /// it) and wakes the receiver if it waits — also when T's constructor throws, since the
  /// hole left behind holds that permit until the receiver passes it.
  template <class U>
  void push(U&& value) {
    try {
      ring_->push(std::forward<U>(value));
    } catch (...) {
      wake_receiver_if_parked();
      throw;
    }
    wake_receiver_if_parked();
  }

  /// Unbounded: queues `value` unless the receiver closed; false (the value untouched) if it
  /// did. The check is made under the list's lock, where close_receiver sets the flag, so no
  /// value can follow the receiver's end.
  template <class U>
  bool push_unless_closed(U&& value) {
    {
      std::lock_guard guard(list_lock_);
      if (rx_closed_.load(std::memory_order_relaxed)) return false;
      list_.push_back(std::forward<U>(value));
    }
    wake_receiver_if_parked();
    return true;
  }

  /// Bounded: a sender gave room back without filling it (a Permit dropped unused, a
  /// reservation granted and then dropped). Once the receiver closed, that room may be what
  /// it waits for (see no_more_sends): wake it.
  void room_returned() noexcept {
    // The load of the semaphore's state comes after the release of the room on the same
    // word: if the close came first, this load sees it (coherence); if it came after, the
    // receiver's check after it sees the room home.
    if (permits_->is_closed()) rx_waker_.wake();
  }

  /// One more sender (a copy of a live one).
  void add_sender() noexcept {
    // Relaxed: the copied sender keeps the count above zero meanwhile.
    senders_.fetch_add(1, std::memory_order_relaxed);
  }
  /// A sender went away; the last one wakes the receiver, who then sees the end.
  void drop_sender() noexcept {
    // Acq_rel: the release half publishes this sender's pushes to the receiver's acquire
    // load of senders_ (so "no sender left" implies "every value is visible").
    if (senders_.fetch_sub(1, std::memory_order_acq_rel) == 1) rx_waker_.wake();
  }
  /// True once the receiver was dropped or closed: sends are refused.
  bool receiver_closed() const noexcept {
    // Acquire: pairs with close_receiver's release store.
    return rx_closed_.load(std::memory_order_acquire);
  }

  // --- the receiver ---

  /// What poll_recv found.
  enum class Recv : unsigned char {
    kValue,    ///< a value, emplaced into the caller's optional
    kEnd,      ///< none will ever come: no sender left (or the receiver closed), drained
    kPending,  ///< none now (with a context: its waker will be woken when one comes)
  };

  /// Takes the next value into `out` (which must be empty) without waiting. With `cx`, a
  /// pending result registers cx's waker first, so no wake-up can be lost. (Values come out
  /// through `out`, not a returned std::optional: g++ returns a small optional through the
  /// stack with a store-forwarding stall, measured at ~15 ns a message on W7.)
  Recv poll_recv(Context* cx, std::optional<T>& out) {
    if (pop(out)) return Recv::kValue;
    if (no_more_sends()) return pop_or_wait_for_reserved(out) ? Recv::kValue : Recv::kEnd;
    if (cx == nullptr) return Recv::kPending;
    rx_waker_.register_waker(cx->waker());
    // Seq_cst read-modify-write: the receiver's barrier in the park protocol (see the class
    // comment; a read-modify-write rather than a fence, which ThreadSanitizer cannot see).
    rx_parked_.exchange(true, std::memory_order_seq_cst);
    if (pop_or_wait_for_reserved(out)) {
      rx_parked_.store(false, std::memory_order_relaxed);
      return Recv::kValue;
    }
    if (no_more_sends()) return pop_or_wait_for_reserved(out) ? Recv::kValue : Recv::kEnd;
    return Recv::kPending;
  }

  /// Receiver only: true when no value can be queued any more besides those queued or being
  /// written now: no sender is left, or the receiver closed and no sender still holds room —
  /// bounded: the permits not home are exactly the slots reserved and not yet consumed
  /// (permits are read first: a holder that reserves between the two reads is counted in
  /// both, and its value is waited for by the caller); unbounded: sends check the flag under
  /// the list's lock, so none follows the close.
  bool no_more_sends() const noexcept {
    // Acquire: pairs with drop_sender's release half, so every push of the senders that
    // went away is visible to the pop that follows.
    if (senders_.load(std::memory_order_acquire) == 0) return true;
    // Acquire: pairs with close_receiver's release store.
    if (!rx_closed_.load(std::memory_order_acquire)) return false;
    if (!permits_) return true;
    // No permits are taken after the close, only given back: the count only grows.
    const std::size_t out = capacity_ - permits_->available_permits();
    return out == ring_->reserved_count();
  }

  /// Closes the channel from the receiving side: later sends are refused, senders waiting
  /// for capacity are woken and refused; the values queued so far can still be received.
  void close_receiver() noexcept {
    if (permits_) {
      // Release: pairs with receiver_closed's and no_more_sends' acquire loads.
      rx_closed_.store(true, std::memory_order_release);
      permits_->close();
    } else {
      std::lock_guard guard(list_lock_);  // see push_unless_closed
      rx_closed_.store(true, std::memory_order_release);
    }
  }

  /// Destroys every value queued now, in place (the receiver went away).
  void drop_queued() noexcept {
    if (ring_) {
      while (ring_->drop_next()) permits_->add_permits(1);
    } else {
      std::lock_guard guard(list_lock_);
      list_.clear();
    }
  }

 private:
  // Takes the next published value into `out`, if any (bounded: and returns its slot's
  // permit).
  bool pop(std::optional<T>& out) {
    if (ring_) {
      // A hole (a push whose constructor threw) is consumed like a value: look further.
      while (ring_->pop_into(out)) {
        permits_->add_permits(1);
        if (out) return true;
      }
      return false;
    }
    std::lock_guard guard(list_lock_);
    if (list_.empty()) return false;
    out.emplace(std::move(list_.front()));
    list_.pop_front();
    return true;
  }
  // The receiver, after raising rx_parked_: pop, waiting for the next value if a sender has
  // reserved its slot and is still writing it (see the class comment).
  bool pop_or_wait_for_reserved(std::optional<T>& out) {
    for (int spins = 0;; ++spins) {
      if (pop(out)) return true;
      if (!ring_ || !ring_->reserved()) return false;
      if (spins > 64) std::this_thread::yield();  // the sender was preempted mid-push
    }
  }
  void wake_receiver_if_parked() noexcept {
    // Seq_cst load after the push: see the class comment. The exchange (relaxed: the
    // waker carries its own synchronisation) lets one sender wake the receiver per park.
    if (rx_parked_.load(std::memory_order_seq_cst) &&
        rx_parked_.exchange(false, std::memory_order_relaxed)) {
      rx_waker_.wake();
    }
  }

  const std::size_t capacity_;        // bounded: the permits of permits_ (0: unbounded)
  std::optional<MpscRing<T>> ring_;   // bounded
  std::optional<Semaphore> permits_;  // bounded: one permit per free slot
  SpinLock list_lock_;                // unbounded: guards list_
  std::deque<T> list_;                // unbounded
  // Live senders. Copies fetch_add (relaxed), drops fetch_sub (acq_rel, see drop_sender);
  // the receiver loads it with acquire (no_more_sends).
  alignas(64) Atomic<std::size_t> senders_{1};
  // Set once (release) by close_receiver (unbounded: under list_lock_); read with acquire
  // by senders (receiver_closed) and by no_more_sends, relaxed under list_lock_ by
  // push_unless_closed.
  Atomic<bool> rx_closed_{false};
  // True while the receiver may be parked: raised (seq_cst exchange) by poll_recv; loaded seq_cst
  // by senders after they pushed (see the class comment); lowered by the sender that wakes it
  // (exchange) or by the receiver when it found a value.
  alignas(64) Atomic<bool> rx_parked_{false};
  AtomicWaker rx_waker_;
};

}  // namespace spool::detail
