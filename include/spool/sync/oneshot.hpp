// spool::oneshot: a channel that carries one value from a Sender to a Receiver.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "spool/coop.hpp"
#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool::oneshot {

/// Thrown by the Receiver when the Sender was dropped without sending.
class RecvError : public std::runtime_error {
 public:
  RecvError()
      : std::runtime_error("spool::oneshot: the sender was dropped without sending a value") {}
};

namespace detail {
template <class T>
struct Shared {
  // The state word, each bit set once and never cleared, by one fetch_or (acq_rel):
  //   kValue         a value is stored: set by send after writing `value` (the release half
  //                  publishes it).
  //   kSenderGone    the Sender was dropped (after sending or not).
  //   kReceiverGone  the Receiver was dropped: send() then reports that no one will receive.
  // The receiver loads it with acquire after registering its waker, which pairs with the
  // sender's release: a send (or drop) between the register and the load still wakes it.
  static constexpr unsigned kValue = 1;
  static constexpr unsigned kSenderGone = 2;
  static constexpr unsigned kReceiverGone = 4;
  std::atomic<unsigned> state{0};
  std::optional<T> value;  // written by send before kValue is set; read after it is seen
  AtomicWaker receiver;
};
}  // namespace detail

template <class T>
class Receiver;

/// The sending half. send() may be called once, from any thread. Dropping it without
/// sending wakes the receiver with RecvError.
template <class T>
class Sender {
 public:
  Sender(Sender&& o) noexcept : shared_(std::move(o.shared_)) {}
  Sender& operator=(Sender&& o) noexcept {
    if (this != &o) {
      close();
      shared_ = std::move(o.shared_);
    }
    return *this;
  }
  ~Sender() { close(); }

  /// Sends `value`. Returns false (and drops the value) when the receiver is gone.
  /// Throws std::logic_error on a second send.
  bool send(T value) {
    if (!shared_)
      throw std::logic_error(
          "spool::oneshot::Sender::send called twice (or on a moved-from Sender)");
    auto s = std::move(shared_);
    s->value.emplace(std::move(value));
    unsigned prev = s->state.fetch_or(detail::Shared<T>::kValue, std::memory_order_acq_rel);
    s->receiver.wake();
    return !(prev & detail::Shared<T>::kReceiverGone);
  }
  /// True when the receiver was dropped (a send would be discarded).
  bool is_closed() const noexcept {
    return !shared_ ||
           (shared_->state.load(std::memory_order_acquire) & detail::Shared<T>::kReceiverGone);
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
  Receiver(Receiver&&) noexcept = default;
  Receiver& operator=(Receiver&&) noexcept = default;
  ~Receiver() {
    if (shared_)
      shared_->state.fetch_or(detail::Shared<T>::kReceiverGone, std::memory_order_acq_rel);
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
    return std::nullopt;
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
