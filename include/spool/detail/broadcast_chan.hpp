// BroadcastChan: the state a broadcast channel's senders and receivers share.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "spool/core/waker.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/waiter_list.hpp"
#include "spool/detail/wake_list.hpp"
#include "spool/sync/broadcast_result.hpp"
#include "spool/sync/send_result.hpp"

namespace spool::detail {

/// A broadcast Recv future's entry in its channel's waiter list. Unlike the other primitives'
/// nodes it has no completion field: completing one gives it nothing (the message stays in the
/// ring), so its owner learns that it was woken from linked(), under the channel's lock.
struct BroadcastWaiter : WaiterNode {
  /// The position its receiver waits for: the channel's tail when the node was linked (a
  /// receiver waits only once it has read everything). A send that moves the tail past it, or
  /// the close, completes the node. Guarded by the channel's lock, as the node is.
  std::uint64_t pos = 0;
};

/// What a broadcast channel's shared state has that does not depend on T (its code is in
/// src/sync/broadcast.cpp): the lock, the waiting receivers, the positions and the counts.
///
/// Positions: each message sent takes the next position (tail_ - 1 is the newest); the ring
/// holds the newest `capacity_` of them, position p in slot p % capacity_. A receiver's `next`
/// is the position it reads next: next == tail_ when it has read everything, and next <
/// oldest_locked() when messages it had not read were overwritten (it lagged).
/// Everything is guarded by lock_, except senders_ (see there).
class SPOOL_API BroadcastCore {
 public:
  /// A channel whose ring has `capacity` (≥ 1) slots.
  explicit BroadcastCore(std::size_t capacity) noexcept : capacity_(capacity) {}
  BroadcastCore(const BroadcastCore&) = delete;
  BroadcastCore& operator=(const BroadcastCore&) = delete;

  /// A sender was copied.
  void add_sender() noexcept {
    // Relaxed: the copier holds a sender, so the count cannot reach 0 meanwhile; the count
    // orders nothing else (see senders_).
    senders_.fetch_add(1, std::memory_order_relaxed);
  }
  /// A sender went away; the last one closes the channel and wakes every waiting receiver.
  void drop_sender();
  /// True once every sender is gone.
  bool is_closed() { return read_locked(closed_); }
  /// The live receivers.
  std::size_t receiver_count() { return read_locked(receivers_); }
  /// The messages some receiver has not read yet (and that were not overwritten).
  std::size_t queued() { return read_locked(queued_); }
  /// How many messages were sent that the receiver at `next` has not received (more than
  /// the capacity when it lagged).
  std::uint64_t unread(std::uint64_t next);
  /// The destructor of a Recv future that waited: unlinks `node` if it still is linked.
  void leave(BroadcastWaiter& node) noexcept;

 protected:
  using Lock = std::unique_lock<Mutex>;

  /// A copy of `field` (one of the members lock_ guards), read under lock_.
  template <class T>
  T read_locked(const T& field) {
    std::lock_guard guard(lock_);
    return field;
  }

  /// The oldest position the ring still holds.
  std::uint64_t oldest_locked() const noexcept { return tail_ > capacity_ ? tail_ - capacity_ : 0; }
  /// Links `node` to wait for position tail_, or refreshes the waker of a node still linked;
  /// a replaced waker goes to `replaced` (dropped by the caller after the unlock).
  void wait_locked(BroadcastWaiter& node, const Waker& waker, Waker& replaced);
  /// Unlinks `node` if it is linked; its waker goes to `old` (dropped after the unlock).
  void leave_locked(BroadcastWaiter& node, Waker& old) noexcept;
  /// With lock_ held through `lock`: completes every waiting receiver that has something to
  /// read now (all of them once closed), its waker moved to `wakes`, woken after the unlock.
  void wake_locked(Lock& lock, WakeList& wakes);

  Mutex lock_;
  WaiterList waiters_;  // Recv futures whose receiver has read everything
  const std::size_t capacity_;
  std::uint64_t tail_ = 0;     // the position of the next message sent
  std::size_t receivers_ = 0;  // live receivers: the readers each new message waits for
  std::size_t queued_ = 0;     // slots whose message some receiver has not read
  bool closed_ = false;        // every sender is gone (set once, never cleared)
  // Live senders. Copies add relaxed (add_sender); a drop subtracts with acq_rel, and the
  // one that takes it to 0 sets closed_ under lock_, which is what receivers read (the lock
  // orders that; the count only elects the last sender).
  Atomic<std::size_t> senders_{1};
};

/// The shared state of one broadcast channel: BroadcastCore plus the ring of messages. A
/// slot counts the receivers that still have to read its message; the last one moves it out
/// (the others copy it), and a receiver that goes away takes its count off every slot it had
/// not read, so a message lives until every receiver read it or it is overwritten.
template <class T>
class BroadcastChan : public BroadcastCore {
  static_assert(std::is_copy_constructible_v<T>,
                "spool::broadcast::channel<T>: T must be copy constructible (every receiver "
                "gets its own copy of each message); for a move-only T, send a "
                "std::shared_ptr<const T>");
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "spool::broadcast::channel<T>: T's move constructor must be noexcept (a send "
                "moves the message into its slot under the channel's lock, where a move that "
                "throws would leave the slot half-written)");

 public:
  /// A channel of `capacity` (≥ 1) slots.
  explicit BroadcastChan(std::size_t capacity)
      : BroadcastCore(capacity), slots_(std::make_unique<Slot[]>(capacity)) {}

  /// Sends `value` to every live receiver, overwriting the oldest message when the ring is
  /// full; refuses it (handing it back) when there is no receiver.
  SendResult<T> send(T&& value) {
    WakeList wakes;  // declared before the lock: woken after the unlock
    Lock lock(lock_);
    if (receivers_ == 0) return SendResult<T>::refused(std::move(value));
    Slot& s = slots_[tail_ % capacity_];
    if (s.unread == 0) ++queued_;  // else it overwrites a message someone had not read
    s.value.emplace(std::move(value));
    s.unread = receivers_;
    ++tail_;
    const std::size_t reached = receivers_;
    wake_locked(lock, wakes);
    return SendResult<T>::sent(reached);
  }

  /// Adds a receiver that sees what is sent from now on; returns its position.
  std::uint64_t subscribe() {
    std::lock_guard guard(lock_);
    ++receivers_;
    return tail_;
  }
  /// Adds a receiver at `next`, a live receiver's position: it has the same messages left.
  void add_receiver_at(std::uint64_t next) {
    std::lock_guard guard(lock_);
    ++receivers_;
    for (std::uint64_t p = std::max(next, oldest_locked()); p < tail_; ++p) {
      ++slots_[p % capacity_].unread;
    }
  }
  /// Removes the receiver at `next`: the messages it had not read stop waiting for it.
  void drop_receiver(std::uint64_t next) noexcept {
    std::lock_guard guard(lock_);
    --receivers_;
    for (std::uint64_t p = std::max(next, oldest_locked()); p < tail_; ++p) {
      Slot& s = slots_[p % capacity_];
      if (--s.unread == 0) {
        s.value.reset();
        --queued_;
      }
    }
  }

  /// A receive of the receiver at `next` (advanced past what it takes) into `out` (empty).
  /// A Recv future's poll passes its `node` and its context's `waker`: when there is nothing
  /// to read, the node is linked (or its waker refreshed) and the result is true (pending);
  /// otherwise the node leaves the list if it was in it. try_recv passes no node (a result of
  /// kEmpty then says there was nothing). A copy of the message that throws leaves
  /// everything as it was.
  bool recv(std::uint64_t& next, broadcast::RecvResult<T>& out, BroadcastWaiter* node,
            const Waker* waker) {
    Waker replaced;  // declared before the lock: dropped after the unlock
    Lock lock(lock_);
    take_locked(next, out);
    if (node == nullptr) return false;
    if (out.status_ == broadcast::RecvStatus::kEmpty) {
      wait_locked(*node, *waker, replaced);
      return true;
    }
    leave_locked(*node, replaced);
    return false;
  }

 private:
  struct Slot {
    std::optional<T> value;  // engaged while unread > 0
    std::size_t unread = 0;  // receivers that still have to read it
  };

  void take_locked(std::uint64_t& next, broadcast::RecvResult<T>& out) {
    using broadcast::RecvStatus;
    const std::uint64_t oldest = oldest_locked();
    if (next < oldest) {
      out.status_ = RecvStatus::kLagged;
      out.missed_ = oldest - next;
      next = oldest;
      return;
    }
    if (next == tail_) {
      out.status_ = closed_ ? RecvStatus::kClosed : RecvStatus::kEmpty;
      return;
    }
    Slot& s = slots_[next % capacity_];
    if (s.unread == 1) {  // the last reader takes the message itself
      out.value_.emplace(std::move(*s.value));
      s.value.reset();
      --queued_;
    } else {
      out.value_.emplace(*s.value);  // may throw: nothing has changed yet
    }
    --s.unread;
    out.status_ = RecvStatus::kValue;
    ++next;
  }

  std::unique_ptr<Slot[]> slots_;  // capacity_ slots
};

}  // namespace spool::detail
