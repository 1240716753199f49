// spool::broadcast: a multi-producer, multi-consumer channel in which every receiver sees
// every message sent after it subscribed; a bounded ring whose sends never wait (a receiver
// that falls behind is told how many messages it missed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "spool/coop.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/broadcast_chan.hpp"
#include "spool/detail/moved_from.hpp"
#include "spool/detail/waiter_list.hpp"
#include "spool/sync/broadcast_result.hpp"
#include "spool/sync/send_result.hpp"

namespace spool::broadcast {

/// The largest capacity of a channel (its ring of slots is allocated up front).
inline constexpr std::size_t max_capacity = std::size_t{1} << 26;

template <class T>
class Sender;
template <class T>
class Receiver;
template <class T>
std::pair<Sender<T>, Receiver<T>> channel(std::size_t capacity);

/// The future of Receiver::recv: ready with the receiver's next message, or with kLagged
/// (some were overwritten before it read them; the next receive gives the oldest still
/// held), or with kClosed once every sender is gone and it has read everything left (see
/// RecvResult). Pending while the receiver has read everything; it keeps the latest waker.
/// Cancellation (destroying it): loses nothing — a message leaves the receiver's view only
/// in the poll that returns it. Movable until first polled; moving it while it waits throws
/// std::logic_error. It borrows its Receiver: it must not outlive it, and one task at a time
/// receives through a Receiver. Spends one unit of the task's cooperative budget per poll.
template <class T>
class Recv {
 public:
  /// Ready with the next outcome; pending while there is nothing to read.
  Poll<RecvResult<T>> poll(Context& cx) {
    if (!spool::detail::coop_poll_proceed(cx)) return pending;
    Poll<RecvResult<T>> out = Poll<RecvResult<T>>::ready();
    waiting_ = rx_->chan("spool::broadcast::Recv::poll")
                   .recv(rx_->next_, out.value(), &node_, &cx.waker());
    if (waiting_) out = pending;
    return out;
  }

  /// Moves a future that does not wait (not polled yet, or done); throws std::logic_error for
  /// one that does (its node is linked in the channel's queue).
  Recv(Recv&& o) : rx_(o.rx_), chan_(o.chan_) {
    if (o.waiting_) spool::detail::throw_moved_while_waiting("spool::broadcast::Recv");
  }
  Recv& operator=(Recv&&) = delete;
  /// True while its last poll left it waiting in the channel's queue (it must not move).
  bool is_waiting() const noexcept { return waiting_; }
  /// Leaves the channel's queue if it waits there (also when its Receiver was moved away
  /// meanwhile: the channel lives on in the moved-to Receiver).
  ~Recv() {
    if (waiting_) chan_->leave(node_);
  }

 private:
  friend class Receiver<T>;
  Recv(Receiver<T>* rx, spool::detail::BroadcastChan<T>* chan) noexcept : rx_(rx), chan_(chan) {}
  Receiver<T>* rx_;
  spool::detail::BroadcastChan<T>* chan_;  // the queue node_ waits in
  spool::detail::BroadcastWaiter node_;
  bool waiting_ = false;  // the last poll was pending: node_ may be linked
};

/// The sending half. Copy it for more producers; the channel closes when every copy is gone
/// (receivers then drain what is left and get kClosed). Thread-safe: copies may send from
/// any threads at once. send() never waits.
template <class T>
class Sender {
 public:
  /// Another sender of the same channel.
  Sender(const Sender& o) noexcept : chan_(o.chan_) {
    if (chan_) chan_->add_sender();
  }
  /// Takes `o`'s place; `o` is left moved-from (using it throws std::logic_error).
  Sender(Sender&& o) noexcept = default;
  /// Drops this sender, then takes `o`'s place.
  Sender& operator=(Sender o) noexcept {
    std::swap(chan_, o.chan_);
    return *this;
  }
  /// The last sender closes the channel.
  ~Sender() {
    if (chan_) chan_->drop_sender();
  }

  /// Sends `value` to every receiver now subscribed, without waiting: when the ring is full
  /// the oldest message is overwritten (receivers that had not read it lag). Returns the
  /// number of receivers reached, or — when there is none — refuses the value and hands it
  /// back (SendResult::value()). Receivers get copies (the last one to read gets the value).
  SendResult<T> send(T value) const {
    return chan("spool::broadcast::Sender::send").send(std::move(value));
  }
  /// A new receiver that sees every message sent from now on.
  Receiver<T> subscribe() const {
    auto& c = chan("spool::broadcast::Sender::subscribe");
    return Receiver<T>(chan_, c.subscribe());
  }
  /// The number of live receivers.
  std::size_t receiver_count() const {
    return chan("spool::broadcast::Sender::receiver_count").receiver_count();
  }
  /// The messages held that some receiver alive when it was sent has not read yet (at most
  /// the capacity).
  std::size_t len() const { return chan("spool::broadcast::Sender::len").queued(); }
  /// True when len() is 0.
  bool is_empty() const { return len() == 0; }

 private:
  friend std::pair<Sender<T>, Receiver<T>> channel<T>(std::size_t capacity);
  explicit Sender(std::shared_ptr<spool::detail::BroadcastChan<T>> chan) noexcept
      : chan_(std::move(chan)) {}
  spool::detail::BroadcastChan<T>& chan(const char* what) const {
    if (!chan_) spool::detail::throw_moved_from_handle(what);
    return *chan_;
  }
  std::shared_ptr<spool::detail::BroadcastChan<T>> chan_;
};

/// A receiving half: it sees every message sent after it subscribed, in send order, each
/// once. A copy is a new receiver at the same place (it has the same messages left to read);
/// resubscribe() makes one that starts with the next message sent. A receiver that falls
/// more than the capacity behind is told how many it missed (kLagged). Destroying it
/// releases the messages it had not read. One task at a time receives through a Receiver;
/// different receivers may be used from any threads at once.
template <class T>
class Receiver {
 public:
  /// A new receiver at `o`'s place (O(capacity) under the channel's lock).
  Receiver(const Receiver& o) : chan_(o.chan_), next_(o.next_) {
    if (chan_) chan_->add_receiver_at(next_);
  }
  /// Takes `o`'s place; `o` is left moved-from (using it throws std::logic_error).
  Receiver(Receiver&& o) noexcept : chan_(std::move(o.chan_)), next_(o.next_) {}
  /// Drops this receiver, then takes `o`'s place.
  Receiver& operator=(Receiver o) noexcept {
    std::swap(chan_, o.chan_);
    std::swap(next_, o.next_);
    return *this;
  }
  /// Releases the messages this receiver had not read.
  ~Receiver() {
    if (chan_) chan_->drop_receiver(next_);
  }

  /// A future of the next outcome (see Recv).
  Recv<T> recv() { return Recv<T>(this, &chan("spool::broadcast::Receiver::recv")); }
  /// The next outcome without waiting: a message, kLagged, kClosed, or kEmpty when nothing
  /// is there now.
  RecvResult<T> try_recv() {
    RecvResult<T> out;
    chan("spool::broadcast::Receiver::try_recv").recv(next_, out, nullptr, nullptr);
    return out;
  }
  /// A new receiver of the same channel that sees the messages sent from now on (not those
  /// this one has yet to read).
  Receiver resubscribe() const {
    auto& c = chan("spool::broadcast::Receiver::resubscribe");
    return Receiver(chan_, c.subscribe());
  }
  /// How many messages were sent that this receiver has not received yet. More than the
  /// capacity means it lagged: its next receive gives kLagged.
  std::uint64_t len() const { return chan("spool::broadcast::Receiver::len").unread(next_); }
  /// True when len() is 0.
  bool is_empty() const { return len() == 0; }
  /// True once every sender is gone (messages may still be left to read).
  bool is_closed() const { return chan("spool::broadcast::Receiver::is_closed").is_closed(); }

 private:
  friend class Sender<T>;
  friend class Recv<T>;
  friend std::pair<Sender<T>, Receiver<T>> channel<T>(std::size_t capacity);
  Receiver(std::shared_ptr<spool::detail::BroadcastChan<T>> chan, std::uint64_t next) noexcept
      : chan_(std::move(chan)), next_(next) {}
  spool::detail::BroadcastChan<T>& chan(const char* what) const {
    if (!chan_) spool::detail::throw_moved_from_handle(what);
    return *chan_;
  }
  std::shared_ptr<spool::detail::BroadcastChan<T>> chan_;
  std::uint64_t next_;  // the position of the next message to read
};

/// A channel whose ring holds the last `capacity` messages: {sender, receiver}. More
/// receivers come from Sender::subscribe() and from copies of a Receiver. T must be copy
/// constructible (every receiver gets its own copy) and nothrow move constructible. Throws
/// std::invalid_argument for a capacity of 0 or above max_capacity.
template <class T>
std::pair<Sender<T>, Receiver<T>> channel(std::size_t capacity) {
  if (capacity == 0 || capacity > max_capacity) {
    throw std::invalid_argument(
        "spool::broadcast::channel(" + std::to_string(capacity) +
        "): the capacity (how many messages the channel holds for slow receivers) must be "
        "between 1 and spool::broadcast::max_capacity (" +
        std::to_string(max_capacity) + ")");
  }
  auto chan = std::make_shared<spool::detail::BroadcastChan<T>>(capacity);
  const std::uint64_t start = chan->subscribe();
  return {Sender<T>(chan), Receiver<T>(std::move(chan), start)};
}

}  // namespace spool::broadcast
