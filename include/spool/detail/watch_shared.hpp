// WatchShared: the state a watch channel's senders and receivers share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <shared_mutex>
#include <utility>

#include "spool/detail/atomic.hpp"
#include "spool/sync/notify.hpp"

namespace spool::detail {

/// The shared state of one watch channel: the value, its version, the counts of each side,
/// and the Notify each side waits on. Receivers read the value under `lock` shared; senders
/// change it under `lock` exclusive and bump the version there, then wake the receivers
/// (notify_waiters, after the unlock).
template <class T>
struct WatchShared {
  /// `state`: the closed bit (set once, by the last sender's drop).
  static constexpr std::uint64_t kClosed = 1;
  /// `state`: what one change adds (the version lives above the closed bit).
  static constexpr std::uint64_t kVersionStep = 2;
  /// The version part of a `state` word.
  static constexpr std::uint64_t version(std::uint64_t s) noexcept { return s & ~kClosed; }

  /// A channel holding `initial`, at version 0, with one sender and one receiver.
  explicit WatchShared(T initial) : value(std::move(initial)) {}
  WatchShared(const WatchShared&) = delete;
  WatchShared& operator=(const WatchShared&) = delete;

  // version | kClosed. The version is bumped (fetch_add of kVersionStep, release) by a change,
  // under `lock` exclusive, before notify_rx.notify_waiters(); kClosed is set (fetch_or,
  // release) by the last sender's drop, before the same call. Read with acquire by has_changed
  // and changed() (pairs with those releases: a receiver that sees a new version then borrows
  // sees that value or a newer one), and under `lock` shared by borrows and subscribe (the lock
  // orders it with the change).
  Atomic<std::uint64_t> state{0};
  // Live senders. Copies add relaxed (the copier holds one, so it is not 0); drops subtract
  // with acq_rel, and the one that takes it to 0 closes the channel (see state).
  Atomic<std::size_t> senders{1};
  // Live receivers. Added relaxed (subscribe, copies); a drop subtracts with acq_rel, and the
  // one that takes it to 0 wakes notify_tx. Read with acquire by Sender::closed() (pairs with
  // that subtraction) and as a hint by send (relaxed: a receiver subscribing meanwhile may or
  // may not count, as in tokio).
  Atomic<std::size_t> receivers{1};
  // Guards `value`: shared for borrows, exclusive for changes (which also bump the version).
  std::shared_mutex lock;
  T value;
  // Woken (notify_waiters) after every change and at the close: Receiver::changed() waits here.
  Notify notify_rx;
  // Woken (notify_waiters) when the last receiver goes away: Sender::closed() waits here.
  Notify notify_tx;
};

}  // namespace spool::detail
