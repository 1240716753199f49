// The intrusive FIFO of waiting futures that every queueing primitive shares (Semaphore, and
// through it Mutex and RwLock; Notify; bounded channels). docs/sync.md describes the design.
#pragma once

#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "spool/core/waker.hpp"
#include "spool/detail/wake_list.hpp"

namespace spool::detail {

/// One waiting future's entry in a WaiterList. It lives inside the future (no allocation per
/// wait), so the future must not move while the node is linked. Every field is guarded by
/// the lock of the primitive whose list links it. A primitive derives from it to add what its
/// waiters carry (permits still needed, a notification, a message slot); the field that tells
/// the owner it was completed is the derived node's, and is written last, after the waker was
/// taken out, since the owner may destroy the node as soon as it sees it.
class WaiterNode {
 public:
  WaiterNode() = default;
  WaiterNode(const WaiterNode&) = delete;
  WaiterNode& operator=(const WaiterNode&) = delete;

  /// True while the node is linked in a list.
  bool linked() const noexcept { return linked_; }

  /// Moves the waiter's waker out (the no-op waker if it has none). Whoever completes or
  /// unlinks the waiter takes it, and wakes or drops it only after releasing the lock.
  Waker take_waker() noexcept {
    Waker w;
    if (waker_) {
      w = std::move(*waker_);
      waker_.reset();
    }
    return w;
  }

 private:
  friend class WaiterList;
  // The waiter's latest Waker: set when the node is linked, refreshed by every later poll
  // (WaiterList::refresh_if_linked). Empty until linked, so that a future that never waits pays
  // nothing for it.
  std::optional<Waker> waker_;
  WaiterNode* prev_ = nullptr;
  WaiterNode* next_ = nullptr;
  bool linked_ = false;
};

/// A FIFO of WaiterNodes linked through the nodes themselves: push, remove and complete are O(1)
/// and never allocate. Not thread-safe: the primitive that owns it guards it (and the nodes
/// in it) with its lock. Never wakes a Waker.
class WaiterList {
 public:
  WaiterList() = default;
  WaiterList(const WaiterList&) = delete;
  WaiterList& operator=(const WaiterList&) = delete;

  /// True when no node is linked.
  bool empty() const noexcept { return head_ == nullptr; }
  /// The oldest node, or null.
  WaiterNode* front() const noexcept { return head_; }

  /// Links `n` (not linked) at the back, with a clone of `waker` (which may throw; `n` then
  /// stays unlinked).
  void push_back(WaiterNode& n, const Waker& waker) {
    n.waker_.emplace(waker);
    link_back(n);
  }

  /// Links `n` (not linked) at the back with `waker` itself: never throws.
  void push_back(WaiterNode& n, Waker&& waker) noexcept {
    n.waker_.emplace(std::move(waker));
    link_back(n);
  }

  /// Unlinks `n`, which must be linked in this list.
  void remove(WaiterNode& n) noexcept {
    if (n.prev_ != nullptr) {
      n.prev_->next_ = n.next_;
    } else {
      head_ = n.next_;
    }
    if (n.next_ != nullptr) {
      n.next_->prev_ = n.prev_;
    } else {
      tail_ = n.prev_;
    }
    n.prev_ = n.next_ = nullptr;
    n.linked_ = false;
  }

  /// Completes the linked node `n`: unlinks it and moves its waker into `wakes` (which must
  /// not be full). The caller then publishes the outcome in the node's own field, last.
  void complete(WaiterNode& n, WakeList& wakes) noexcept {
    remove(n);
    wakes.push(n.take_waker());
  }

  /// A later poll of the waiter owning `n`: takes `lock` (the primitive's lock, which guards
  /// this list) and, if `n` is still linked, stores `waker` in it unless its waker already
  /// wakes the same task (DESIGN §1: a pending leaf keeps the latest waker), then returns
  /// true. The replaced waker is dropped after `lock` is released (dropping a waker may free
  /// a task). False: `n` was completed meanwhile (its own field tells how).
  template <class Lockable>
  static bool refresh_if_linked(Lockable& lock, WaiterNode& n, const Waker& waker) {
    Waker replaced;  // declared before the guard: dropped after the unlock
    std::lock_guard<Lockable> guard(lock);
    if (!n.linked_) return false;
    refresh_locked(n, waker, replaced);
    return true;
  }

  /// The same for a caller that holds the primitive's lock already and knows `n` is linked:
  /// stores `waker` in `n` unless its waker already wakes the same task; the replaced waker
  /// goes to `replaced`, which the caller drops after releasing the lock.
  static void refresh_locked(WaiterNode& n, const Waker& waker, Waker& replaced) {
    if (n.waker_->will_wake(waker)) return;
    replaced = waker;
    std::swap(replaced, *n.waker_);
  }
  /// The same with a waker already cloned: never throws (`waker` is stored, or left for the
  /// caller to drop when the stored one already wakes the same task).
  static void refresh_locked(WaiterNode& n, Waker&& waker, Waker& replaced) noexcept {
    if (n.waker_->will_wake(waker)) return;
    replaced = std::move(waker);
    std::swap(replaced, *n.waker_);
  }

 private:
  void link_back(WaiterNode& n) noexcept {
    n.prev_ = tail_;
    n.next_ = nullptr;
    if (tail_ != nullptr) {
      tail_->next_ = &n;
    } else {
      head_ = &n;
    }
    tail_ = &n;
    n.linked_ = true;
  }

  WaiterNode* head_ = nullptr;
  WaiterNode* tail_ = nullptr;
};

/// Throws the address-stability error (DESIGN §5) for a future of type `what` that was moved
/// while its waiter node was linked.
[[noreturn]] inline void throw_moved_while_waiting(const char* what) {
  throw std::logic_error(
      std::string(what) +
      " moved while it waits: its waiter node is linked into the primitive's queue in place; "
      "move it only before its first poll (co_await it directly, or keep it where it is, e.g. "
      "in a coroutine frame)");
}

}  // namespace spool::detail
