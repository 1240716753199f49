// spool::watch: a channel that holds one value, the latest sent; receivers borrow it and wait
// for it to change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <utility>

#include "spool/coop.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/moved_from.hpp"
#include "spool/detail/notify_wait.hpp"
#include "spool/detail/waiter_list.hpp"
#include "spool/detail/watch_shared.hpp"
#include "spool/sync/send_result.hpp"

namespace spool::watch {

template <class T>
class Sender;
template <class T>
class Receiver;
template <class T>
std::pair<Sender<T>, Receiver<T>> channel(T initial);

/// A read-locked view of the channel's value (Receiver::borrow, Sender::borrow). While it
/// lives, senders wait for the lock: keep it short, and **never hold it across a co_await**
/// (the task may resume on another thread, and a std::shared_mutex must be unlocked by the
/// thread that locked it) nor while sending on the same channel from the same thread (that
/// deadlocks). Take one at a time per thread. Neither copyable nor movable: use it where
/// borrow() returns it.
template <class T>
class Ref {
 public:
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;

  /// The value.
  const T& operator*() const noexcept { return *value_; }
  /// The value.
  const T* operator->() const noexcept { return value_; }
  /// The value.
  const T& get() const noexcept { return *value_; }
  /// True when the borrowing receiver had not seen this version of the value (always false
  /// for Sender::borrow). After borrow_and_update() it tells whether it was new.
  bool has_changed() const noexcept { return has_changed_; }

 private:
  friend class Sender<T>;
  friend class Receiver<T>;
  Ref(std::shared_lock<std::shared_mutex> lock, const T* value, bool has_changed) noexcept
      : lock_(std::move(lock)), value_(value), has_changed_(has_changed) {}
  std::shared_lock<std::shared_mutex> lock_;
  const T* value_;
  bool has_changed_;
};

/// The future of Receiver::changed(): ready with true once the channel holds a version the
/// receiver has not seen (it is then marked seen; borrow() shows it or a newer one), with
/// false once every sender is gone and the receiver has seen the last version. Pending
/// otherwise, keeping the latest waker. Cancellation (destroying it): loses nothing (the
/// receiver's seen version changes only in the poll that returns true). Movable until first
/// polled; moving it while it waits throws std::logic_error. It borrows its Receiver: it must
/// not outlive it. Spends one unit of the task's cooperative budget per poll.
template <class T>
class Changed {
 public:
  /// Ready with true (a new version) or false (closed); pending while neither holds.
  Poll<bool> poll(Context& cx) {
    if (!spool::detail::coop_poll_proceed(cx)) return pending;
    auto& shared = rx_->shared("spool::watch::Changed::poll");
    std::uint64_t state = 0;
    const bool done =
        wait_
            .poll(cx, shared.notify_rx,
                  [&] {
                    // Acquire: see WatchShared::state.
                    state = shared.state.load(std::memory_order_acquire);
                    return Shared::version(state) != rx_->seen_ || (state & Shared::kClosed) != 0;
                  })
            .is_ready();
    if (!done) return pending;
    if (Shared::version(state) == rx_->seen_) return false;  // closed, nothing new
    rx_->seen_ = Shared::version(state);
    return true;
  }

  /// Moves a future that does not wait (not polled yet, or done); throws std::logic_error for
  /// one that does (it is queued in the channel's Notify).
  Changed(Changed&& o) : rx_(o.rx_) {
    if (o.wait_.waiting()) spool::detail::throw_moved_while_waiting("spool::watch::Changed");
  }
  Changed& operator=(Changed&&) = delete;

 private:
  using Shared = spool::detail::WatchShared<T>;
  friend class Receiver<T>;
  explicit Changed(Receiver<T>* rx) noexcept : rx_(rx) {}
  Receiver<T>* rx_;
  spool::detail::NotifyWait wait_;
};

/// The future of Sender::closed(): ready once no receiver is left (a send would be
/// refused). Pending otherwise, keeping the latest waker. Cancellation loses nothing. Movable
/// until first polled; moving it while it waits throws std::logic_error. It holds a share of
/// the channel, so it may outlive its Sender.
template <class T>
class Closed {
 public:
  /// Ready once the receiver count is 0. Throws std::logic_error on a moved-from future.
  Poll<void> poll(Context& cx) {
    if (!shared_) throw std::logic_error("spool::watch::Closed polled after it was moved from");
    return wait_.poll(cx, shared_->notify_tx, [this] {
      // Acquire: pairs with the last receiver's acq_rel drop (see WatchShared::receivers).
      return shared_->receivers.load(std::memory_order_acquire) == 0;
    });
  }

  /// Moves a future that does not wait (the source is left empty); throws std::logic_error
  /// for one that does, leaving both intact.
  Closed(Closed&& o) : shared_(o.shared_) {
    if (o.wait_.waiting()) spool::detail::throw_moved_while_waiting("spool::watch::Closed");
    o.shared_.reset();
  }
  Closed& operator=(Closed&&) = delete;

 private:
  friend class Sender<T>;
  explicit Closed(std::shared_ptr<spool::detail::WatchShared<T>> shared) noexcept
      : shared_(std::move(shared)) {}
  std::shared_ptr<spool::detail::WatchShared<T>> shared_;  // the channel outlives the wait
  spool::detail::NotifyWait wait_;
};

/// The sending half. Copy it for more senders; when every copy is gone the channel is
/// closed (receivers' changed() then gives false, once they have seen the last value).
/// Thread-safe: copies may send from any threads at once. No send waits for receivers.
template <class T>
class Sender {
 public:
  /// Another sender of the same channel.
  Sender(const Sender& o) noexcept : shared_(o.shared_) {
    // Relaxed: see WatchShared::senders.
    if (shared_) shared_->senders.fetch_add(1, std::memory_order_relaxed);
  }
  /// Takes `o`'s place; `o` is left moved-from (using it throws std::logic_error).
  Sender(Sender&& o) noexcept = default;
  /// Drops this sender, then takes `o`'s place.
  Sender& operator=(Sender o) noexcept {
    std::swap(shared_, o.shared_);
    return *this;
  }
  /// The last sender closes the channel and wakes the receivers.
  ~Sender() {
    // AcqRel: see WatchShared::senders.
    if (!shared_ || shared_->senders.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    // Release: see WatchShared::state.
    shared_->state.fetch_or(Shared::kClosed, std::memory_order_release);
    shared_->notify_rx.notify_waiters();
  }

  /// Replaces the value and wakes the receivers, if there is any receiver; when there is
  /// none, the value is refused and handed back (SendResult::value()) and the channel keeps
  /// the old one (tokio's send). send_replace stores it either way.
  SendResult<T> send(T value) const {
    auto& s = shared("spool::watch::Sender::send");
    // Relaxed: a hint (see WatchShared::receivers).
    const std::size_t receivers = s.receivers.load(std::memory_order_relaxed);
    if (receivers == 0) return SendResult<T>::refused(std::move(value));
    send_replace(std::move(value));
    return SendResult<T>::sent(receivers);
  }
  /// Replaces the value (with or without receivers), wakes the receivers, and returns the
  /// old value.
  T send_replace(T value) const {
    send_if_modified([&value](T& current) {
      std::swap(current, value);
      return true;
    });
    return value;
  }
  /// Changes the value in place with `modify(T&)` under the write lock, then wakes the
  /// receivers (with or without receivers). `modify` must not use the channel.
  template <class F>
  void send_modify(F&& modify) const {
    send_if_modified([&modify](T& current) {
      std::forward<F>(modify)(current);
      return true;
    });
  }
  /// Calls `modify(T&)` under the write lock; when it returns true the value counts as
  /// changed (a new version) and the receivers are woken; false changes nothing for them
  /// (`modify` must then have left the value as it was). Returns what `modify` returned. If
  /// `modify` throws, the exception propagates and no version is made. `modify` must not use
  /// the channel.
  template <class F>
  bool send_if_modified(F&& modify) const {
    auto& s = shared("spool::watch::Sender::send_if_modified");
    {
      std::unique_lock lock(s.lock);
      if (!std::forward<F>(modify)(s.value)) return false;
      // Release: see WatchShared::state (under the lock, with the change).
      s.state.fetch_add(Shared::kVersionStep, std::memory_order_release);
    }
    s.notify_rx.notify_waiters();
    return true;
  }

  /// A read-locked view of the value (see Ref; has_changed() is false).
  Ref<T> borrow() const {
    auto& s = shared("spool::watch::Sender::borrow");
    return Ref<T>(std::shared_lock(s.lock), &s.value, false);
  }
  /// A new receiver, which counts the current value as seen.
  Receiver<T> subscribe() const {
    auto& s = shared("spool::watch::Sender::subscribe");
    // Relaxed: see WatchShared::receivers.
    s.receivers.fetch_add(1, std::memory_order_relaxed);
    std::shared_lock lock(s.lock);
    // Under the lock: the version of the value now held (see WatchShared::state).
    return Receiver<T>(shared_, Shared::version(s.state.load(std::memory_order_acquire)));
  }
  /// The live receivers.
  std::size_t receiver_count() const {
    // Acquire: see WatchShared::receivers.
    return shared("spool::watch::Sender::receiver_count").receivers.load(std::memory_order_acquire);
  }
  /// True when no receiver is left (a send would be refused; subscribe() makes one).
  bool is_closed() const { return receiver_count() == 0; }
  /// A future that completes once no receiver is left (see Closed).
  Closed<T> closed() const {
    shared("spool::watch::Sender::closed");
    return Closed<T>(shared_);
  }

 private:
  using Shared = spool::detail::WatchShared<T>;
  friend std::pair<Sender<T>, Receiver<T>> channel<T>(T initial);
  explicit Sender(std::shared_ptr<Shared> shared) noexcept : shared_(std::move(shared)) {}
  Shared& shared(const char* what) const {
    if (!shared_) spool::detail::throw_moved_from_handle(what);
    return *shared_;
  }
  std::shared_ptr<Shared> shared_;
};

/// A receiving half: it reads the latest value (borrow) and waits for a newer one
/// (changed). It remembers the last version it has seen; a copy is a new receiver that
/// remembers the same one. One task at a time uses a Receiver; different receivers may be
/// used from any threads at once.
template <class T>
class Receiver {
 public:
  /// A new receiver that has seen what `o` has seen.
  Receiver(const Receiver& o) noexcept : shared_(o.shared_), seen_(o.seen_) {
    // Relaxed: see WatchShared::receivers.
    if (shared_) shared_->receivers.fetch_add(1, std::memory_order_relaxed);
  }
  /// Takes `o`'s place; `o` is left moved-from (using it throws std::logic_error).
  Receiver(Receiver&& o) noexcept : shared_(std::move(o.shared_)), seen_(o.seen_) {}
  /// Drops this receiver, then takes `o`'s place.
  Receiver& operator=(Receiver o) noexcept {
    std::swap(shared_, o.shared_);
    std::swap(seen_, o.seen_);
    return *this;
  }
  /// The last receiver wakes the senders' closed() futures.
  ~Receiver() {
    // AcqRel: see WatchShared::receivers.
    if (shared_ && shared_->receivers.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      shared_->notify_tx.notify_waiters();
    }
  }

  /// A read-locked view of the latest value (see Ref: not across a co_await). Its
  /// has_changed() tells whether this receiver had seen it; it stays unseen.
  Ref<T> borrow() const { return borrow_impl("spool::watch::Receiver::borrow", nullptr); }
  /// As borrow(), and marks the value seen (changed() then waits for a newer one).
  Ref<T> borrow_and_update() {
    return borrow_impl("spool::watch::Receiver::borrow_and_update", &seen_);
  }
  /// True when the channel holds a version this receiver has not seen (also after the
  /// close: the last value may still be unseen; is_closed() tells about the senders).
  bool has_changed() const {
    // Acquire: see WatchShared::state.
    const std::uint64_t s =
        shared("spool::watch::Receiver::has_changed").state.load(std::memory_order_acquire);
    return Shared::version(s) != seen_;
  }
  /// True once every sender is gone (no newer value can come).
  bool is_closed() const {
    // Acquire: see WatchShared::state.
    return (shared("spool::watch::Receiver::is_closed").state.load(std::memory_order_acquire) &
            Shared::kClosed) != 0;
  }
  /// A future that completes when a version this receiver has not seen is there, or with
  /// false once the senders are gone (see Changed): `while (co_await rx.changed())
  /// use(*rx.borrow());`.
  Changed<T> changed() {
    shared("spool::watch::Receiver::changed");
    return Changed<T>(this);
  }

 private:
  using Shared = spool::detail::WatchShared<T>;
  friend class Sender<T>;
  friend class Changed<T>;
  friend std::pair<Sender<T>, Receiver<T>> channel<T>(T initial);
  Receiver(std::shared_ptr<Shared> shared, std::uint64_t seen) noexcept
      : shared_(std::move(shared)), seen_(seen) {}
  Shared& shared(const char* what) const {
    if (!shared_) spool::detail::throw_moved_from_handle(what);
    return *shared_;
  }
  // A borrow; with `mark_seen` (this receiver's seen_), marks the value seen.
  Ref<T> borrow_impl(const char* what, std::uint64_t* mark_seen) const {
    auto& s = shared(what);
    std::shared_lock lock(s.lock);
    // Under the lock: the version of the value it guards (see WatchShared::state).
    const std::uint64_t version = Shared::version(s.state.load(std::memory_order_acquire));
    const bool changed = version != seen_;
    if (mark_seen != nullptr) *mark_seen = version;
    return Ref<T>(std::move(lock), &s.value, changed);
  }
  std::shared_ptr<Shared> shared_;
  std::uint64_t seen_;  // the last version seen (borrow_and_update, changed)
};

/// A channel holding `initial`: {sender, receiver}. The receiver counts `initial` as seen.
template <class T>
std::pair<Sender<T>, Receiver<T>> channel(T initial) {
  auto shared = std::make_shared<spool::detail::WatchShared<T>>(std::move(initial));
  return {Sender<T>(shared), Receiver<T>(shared, 0)};
}

}  // namespace spool::watch
