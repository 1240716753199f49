// spool::oneshot: a channel that carries one value from a Sender to a Receiver.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "spool/coop.hpp"
#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::oneshot {

/// Thrown by the Receiver when no value will come: the Sender was dropped without sending,
/// or the Receiver closed the channel before a value was sent (the message says which).
class SPOOL_API RecvError : public std::runtime_error {
 public:
  /// The sender was dropped without sending.
  RecvError()
      : std::runtime_error("spool::oneshot: the sender was dropped without sending a value") {}

 private:
  template <class T>
  friend class Receiver;
  struct ClosedTag {};
  explicit RecvError(ClosedTag)
      : std::runtime_error(
            "spool::oneshot: the receiver closed the channel before a value was sent") {}
};

namespace detail {
template <class T>
struct Shared {
  // The state word; no bit is ever cleared. kReceiverGone is set by one fetch_or (acq_rel).
  // kValue is set by send's compare-exchange (acq_rel) together with kSenderGone, and only
  // while kReceiverGone is clear, so a value is either seen by the receiver or refused by
  // send — never both; otherwise kSenderGone is set by a fetch_or (acq_rel):
  //   kValue          a value is stored: set by send after writing `value` (the release half
  //                   publishes it).
  //   kSenderGone     the Sender was dropped (after sending or not).
  //   kReceiverGone   the Receiver was dropped or closed: send() then refuses its value.
  //   kClosedWaiting  a Closed future registered its waker (fetch_or, acq_rel): send's CAS,
  //                   which reads the word anyway, then wakes it. Both are RMWs of this
  //                   word: either send sees the bit, or Closed's load after it sees kValue.
  // Each side loads it with acquire after registering its waker, which pairs with the other
  // side's release: a send (or drop, or close) between the register and the load still
  // wakes it.
  static constexpr unsigned kValue = 1;
  static constexpr unsigned kSenderGone = 2;
  static constexpr unsigned kReceiverGone = 4;
  static constexpr unsigned kClosedWaiting = 8;
  spool::detail::Atomic<unsigned> state{0};
  std::optional<T> value;  // written by send before kValue is set; read after it is seen
  AtomicWaker receiver;    // woken by send and by the Sender's drop
  AtomicWaker sender;      // woken by the Receiver's close or drop (Sender::closed)
};
}  // namespace detail

template <class T>
class Receiver;
template <class T>
class Closed;

/// The sending half. send() may be called once, from any thread. Dropping it without
/// sending wakes the receiver with RecvError.
template <class T>
class Sender {
 public:
  /// Takes over the channel (the source is left empty).
  Sender(Sender&& o) noexcept : shared_(std::move(o.shared_)) {}
  /// Ends this sender's channel (as the destructor), then takes over `o`'s.
  Sender& operator=(Sender&& o) noexcept {
    if (this != &o) {
      close();
      shared_ = std::move(o.shared_);
    }
    return *this;
  }
  /// Without a send, ends the channel: the receiver gets RecvError (sender dropped).
  ~Sender() { close(); }

  /// Sends `value`. Returns false (and drops the value) when the receiver is gone or
  /// closed. Throws std::logic_error on a second send.
  bool send(T value) {
    if (!shared_)
      throw std::logic_error(
          "spool::oneshot::Sender::send called twice (or on a moved-from Sender)");
    // Stored before the share is taken: if the move throws, the Sender still holds it and
    // its drop ends the channel for the receiver.
    shared_->value.emplace(std::move(value));
    auto s = std::move(shared_);
    unsigned prev = s->state.load(std::memory_order_relaxed);
    do {
      if (prev & detail::Shared<T>::kReceiverGone) {
        // Refused: the receiver never reads `value` without kValue, so it is ours to drop.
        s->value.reset();
        s->state.fetch_or(detail::Shared<T>::kSenderGone, std::memory_order_acq_rel);
        return false;
      }
    } while (!s->state.compare_exchange_weak(
        prev, prev | detail::Shared<T>::kValue | detail::Shared<T>::kSenderGone,
        std::memory_order_acq_rel, std::memory_order_relaxed));
    s->receiver.wake();
    if (prev & detail::Shared<T>::kClosedWaiting) s->sender.wake();
    return true;
  }
  /// True when the receiver was dropped or closed (a send would be refused).
  bool is_closed() const noexcept {
    return !shared_ ||
           (shared_->state.load(std::memory_order_acquire) & detail::Shared<T>::kReceiverGone);
  }
  /// A future that completes once the receiver is dropped or closed — for a producer that
  /// should stop computing a value nobody will receive — or once a value was sent (nothing
  /// is left to wait for). It shares the channel (the Sender may move, send or go away
  /// meanwhile); one closed() future waits at a time (a second one polled replaces the
  /// first one's waker). Throws std::logic_error on a Sender that
  /// has sent or was moved from.
  Closed<T> closed() {
    if (!shared_)
      throw std::logic_error(
          "spool::oneshot::Sender::closed called after send (or on a moved-from Sender)");
    return Closed<T>(shared_);
  }

 private:
  template <class U>
  friend std::pair<Sender<U>, Receiver<U>> channel();
  explicit Sender(std::shared_ptr<detail::Shared<T>> s) : shared_(std::move(s)) {}
  void close() noexcept {
    if (!shared_) return;
    shared_->state.fetch_or(detail::Shared<T>::kSenderGone, std::memory_order_acq_rel);
    shared_->receiver.wake();
    shared_.reset();
  }
  std::shared_ptr<detail::Shared<T>> shared_;
};

/// The receiving half: a Future of T (throws RecvError if the sender went away). Polled
/// by one task; it stores the latest waker on every poll.
template <class T>
class Receiver {
 public:
  /// Takes over the channel (the source is left empty).
  Receiver(Receiver&& o) noexcept : shared_(std::move(o.shared_)) {}
  /// Ends this receiver's channel (as the destructor), then takes over `o`'s.
  Receiver& operator=(Receiver&& o) noexcept {
    if (this != &o) {
      close();
      shared_ = std::move(o.shared_);
    }
    return *this;
  }
  /// Ends the channel: a later send() refuses its value, and the sender's closed() completes.
  ~Receiver() { close(); }

  /// Closes the channel from the receiving side: a later send is refused (returns false)
  /// and the Sender's closed() completes. A value sent before the close can still be
  /// received (poll or try_recv); otherwise receiving now throws RecvError. Idempotent.
  void close() noexcept {
    if (!shared_) return;
    unsigned prev =
        shared_->state.fetch_or(detail::Shared<T>::kReceiverGone, std::memory_order_acq_rel);
    if (!(prev & detail::Shared<T>::kReceiverGone)) shared_->sender.wake();
  }

  /// The value if it was sent, without waiting: std::nullopt while the sender may still
  /// send. Throws RecvError when it never will (dropped, or this side closed first), and
  /// std::logic_error once the value was taken.
  std::optional<T> try_recv() {
    if (!shared_) throw std::logic_error("spool::oneshot::Receiver used after it gave its value");
    return try_take();
  }

  /// Ready with the value once sent; throws RecvError once the sender is gone without
  /// sending. Spends one unit of the task's cooperative budget.
  Poll<T> poll(Context& cx) {
    if (!shared_) throw std::logic_error("spool::oneshot::Receiver polled after it gave its value");
    if (!spool::detail::coop_poll_proceed(cx)) return pending;
    if (auto r = try_take()) return std::move(*r);
    shared_->receiver.register_waker(cx.waker());
    if (auto r = try_take()) return std::move(*r);
    return pending;
  }

 private:
  template <class U>
  friend std::pair<Sender<U>, Receiver<U>> channel();
  explicit Receiver(std::shared_ptr<detail::Shared<T>> s) : shared_(std::move(s)) {}

  std::optional<T> try_take() {
    unsigned s = shared_->state.load(std::memory_order_acquire);
    if (s & detail::Shared<T>::kValue) {
      // (Returned straight from the shared state: a named local std::optional<T> here makes
      // g++ 12 -O1 report a false -Wmaybe-uninitialized for T = std::unique_ptr<U>.)
      std::shared_ptr<detail::Shared<T>> shared = std::move(shared_);
      return std::move(shared->value);
    }
    if (s & detail::Shared<T>::kSenderGone) throw RecvError();
    if (s & detail::Shared<T>::kReceiverGone) throw RecvError(RecvError::ClosedTag{});
    return std::nullopt;
  }

  std::shared_ptr<detail::Shared<T>> shared_;
};

/// The future of Sender::closed(): ready once the receiver is dropped or closed, or a value
/// was sent.
template <class T>
class Closed {
 public:
  /// Ready once the receiver is gone or closed (or a value was sent); stores the latest
  /// waker while it is not.
  Poll<void> poll(Context& cx) {
    if (!shared_) throw std::logic_error("spool::oneshot::Closed polled after it was moved from");
    if (is_closed()) return Poll<void>::ready();
    shared_->sender.register_waker(cx.waker());
    // Acq_rel: see kClosedWaiting (Shared::state); the load below then sees a send before it.
    shared_->state.fetch_or(detail::Shared<T>::kClosedWaiting, std::memory_order_acq_rel);
    if (is_closed()) return Poll<void>::ready();
    return pending;
  }

 private:
  friend class Sender<T>;
  explicit Closed(std::shared_ptr<detail::Shared<T>> shared) noexcept
      : shared_(std::move(shared)) {}
  bool is_closed() const noexcept {
    // Acquire: pairs with the receiver's close and with send (see Shared::state).
    return shared_->state.load(std::memory_order_acquire) &
           (detail::Shared<T>::kReceiverGone | detail::Shared<T>::kValue);
  }
  std::shared_ptr<detail::Shared<T>> shared_;
};

/// A new one-shot channel: {sender, receiver}.
template <class T>
std::pair<Sender<T>, Receiver<T>> channel() {
  auto s = std::make_shared<detail::Shared<T>>();
  return {Sender<T>(s), Receiver<T>(s)};
}

}  // namespace spool::oneshot
