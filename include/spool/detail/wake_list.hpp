// WakeList: wakers collected under a primitive's lock, woken after the lock is released.
#pragma once

#include <array>
#include <cstddef>
#include <new>
#include <utility>

#include "spool/core/waker.hpp"

namespace spool::detail {

/// A bounded batch of Wakers. A primitive moves the wakers of the waiters it completes in
/// here while it holds its lock, releases the lock, then calls wake_all(): no waker runs
/// under the lock (DESIGN §2: waking only schedules, but a waker's code is not ours, and may
/// drop the last reference to a task whose frame holds another waiter of the same primitive).
/// When full() the caller releases its lock, wakes the batch and takes the lock again.
/// Owned by one thread (a local variable).
class WakeList {
 public:
  /// The batch size (tokio's WakeList holds 32 too).
  static constexpr std::size_t kCapacity = 32;

  WakeList() = default;
  WakeList(const WakeList&) = delete;
  WakeList& operator=(const WakeList&) = delete;
  /// Wakes whatever is left.
  ~WakeList() { wake_all(); }

  /// True when no more wakers fit.
  bool full() const noexcept { return size_ == kCapacity; }
  /// Adds `w` (the list must not be full).
  void push(Waker&& w) noexcept { new (&slots_[size_++].waker) Waker(std::move(w)); }
  /// When full: releases `lock` (a std::unique_lock of the primitive's lock), wakes the
  /// batch and takes `lock` again.
  template <class Lock>
  void flush_if_full(Lock& lock) {
    if (!full()) return;
    lock.unlock();
    wake_all();
    lock.lock();
  }
  /// Wakes every collected waker (in order) and empties the list.
  void wake_all() {
    for (std::size_t i = 0; i < size_; ++i) {
      Waker& w = slots_[i].waker;
      std::move(w).wake();
      w.~Waker();
    }
    size_ = 0;
  }

 private:
  // Raw slots: only the pushed wakers are ever constructed and destroyed (a list that wakes
  // one waiter, the common case, costs one waker, not kCapacity).
  union Slot {
    Slot() noexcept {}
    ~Slot() {}
    Waker waker;
  };
  std::array<Slot, kCapacity> slots_;
  std::size_t size_ = 0;
};

}  // namespace spool::detail
