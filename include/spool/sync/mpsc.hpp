// spool::mpsc: multi-producer, single-consumer channels — bounded (senders wait for room:
// back-pressure) and unbounded.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "spool/coop.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/mpsc_chan.hpp"
#include "spool/sync/semaphore.hpp"

namespace spool::mpsc {

/// The largest capacity of a bounded channel (its ring of slots is allocated up front).
/// Beyond it, use unbounded_channel.
inline constexpr std::size_t max_capacity = std::size_t{1} << 26;

/// What try_send did with the value.
enum class TrySendResult {
  kSent,    ///< queued; the value was moved from
  kFull,    ///< no room now (bounded); the value is untouched
  kClosed,  ///< the receiver is gone or closed; the value is untouched
};

namespace detail {
/// What every kind of sender shares: a counted reference to the channel. Copying one adds
/// a sender; the last one to go away ends the channel for the receiver (once drained).
template <class T>
class SenderHandle {
 public:
  SenderHandle(const SenderHandle& o) noexcept : chan_(o.chan_) {
    if (chan_) chan_->add_sender();
  }
  SenderHandle(SenderHandle&& o) noexcept = default;
  SenderHandle& operator=(SenderHandle o) noexcept {
    std::swap(chan_, o.chan_);
    return *this;
  }
  ~SenderHandle() {
    if (chan_) chan_->drop_sender();
  }

  /// True when the receiver is gone or closed (a send would be refused), or this sender was
  /// moved from.
  bool is_closed() const noexcept { return !chan_ || chan_->receiver_closed(); }

 protected:
  explicit SenderHandle(std::shared_ptr<spool::detail::MpscChan<T>> chan) noexcept
      : chan_(std::move(chan)) {}
  spool::detail::MpscChan<T>& chan(const char* what) const {
    if (!chan_) {
      throw std::logic_error(std::string("spool::mpsc::") + what +
                             " on a moved-from sender; use a live copy of the sender");
    }
    return *chan_;
  }

 private:
  std::shared_ptr<spool::detail::MpscChan<T>> chan_;
};
}  // namespace detail

template <class T>
class Sender;
template <class T>
class Send;
template <class T>
class UnboundedSender;
template <class T>
class Receiver;
template <class T>
std::pair<Sender<T>, Receiver<T>> channel(std::size_t capacity);
template <class T>
std::pair<UnboundedSender<T>, Receiver<T>> unbounded_channel();

/// Room for one value in a bounded channel, reserved by Sender::reserve: send() then queues
/// without waiting. It counts as a sender while it lives (the receiver does not see the end
/// before it is used or dropped), so it may outlive the Sender it came from. Destroying it
/// unused gives the room back. Move only.
template <class T>
class Permit : public detail::SenderHandle<T> {
 public:
  /// Moves the reserved room (the source no longer holds it).
  Permit(Permit&&) noexcept = default;
  Permit& operator=(Permit&&) = delete;
  /// Gives the room back if it was not used.
  ~Permit() {
    if (permit_.num_permits() != 0) {
      permit_.release();
      this->chan("Permit").room_returned();
    }
  }

  /// Queues `value` (never waits; when the receiver went away meanwhile, the value goes with
  /// the channel). Throws std::logic_error on a used or moved-from Permit.
  void send(T value) {
    if (permit_.num_permits() == 0)
      throw std::logic_error("spool::mpsc::Permit::send on a used or moved-from permit");
    permit_.forget();  // the slot's permit now travels with the value
    this->chan("Permit::send").push(std::move(value));
  }

 private:
  template <class U>
  friend class Reserve;
  Permit(const detail::SenderHandle<T>& sender, SemaphorePermit permit) noexcept
      : detail::SenderHandle<T>(sender), permit_(std::move(permit)) {}
  SemaphorePermit permit_;
};

/// The future of Sender::reserve: ready with a Permit once there is room; ready with nullopt
/// when the receiver is gone or closed. Cancellation: destroyed while it waits, it leaves
/// the queue of senders (room already given to it passes to the next). Movable until first
/// polled; moving it while it waits throws std::logic_error. It must not outlive its Sender.
template <class T>
class Reserve {
 public:
  /// Moves a future that does not wait; throws std::logic_error for one that does. The
  /// source then has nothing to give back when destroyed.
  Reserve(Reserve&& o)
      : sender_(o.sender_),
        chan_(o.chan_),
        acquire_(std::move(o.acquire_)),
        room_taken_(std::exchange(o.room_taken_, true)) {}
  Reserve& operator=(Reserve&&) = delete;
  /// Gives back room granted to it and never taken (see MpscChan::room_returned).
  ~Reserve() {
    if (room_taken_) return;
    acquire_.reset();
    chan_->room_returned();
  }

  /// Ready with the permit (or nullopt: closed); pending while the channel is full.
  Poll<std::optional<Permit<T>>> poll(Context& cx) {
    std::optional<SemaphorePermit> room = poll_room(cx);
    if (!room) return pending;
    if (room->num_permits() == 0) return std::optional<Permit<T>>();
    return std::optional<Permit<T>>(Permit<T>(*sender_, std::move(*room)));
  }

 private:
  friend class Sender<T>;
  friend class Send<T>;
  Reserve(const detail::SenderHandle<T>& sender, spool::detail::MpscChan<T>* chan)
      : sender_(&sender), chan_(chan), acquire_(chan->permits().acquire(1)) {}

  // Room for one value: nullopt while the channel is full (pending), an empty permit when
  // the receiver is gone or closed, else the slot's permit.
  std::optional<SemaphorePermit> poll_room(Context& cx) {
    if (chan_->receiver_closed()) return SemaphorePermit();
    try {
      Poll<SemaphorePermit> p = acquire_->poll(cx);
      if (p.is_pending()) return std::nullopt;
      room_taken_ = true;
      return std::move(p).value();
    } catch (const AcquireError&) {  // the receiver closed the channel while we waited
      return SemaphorePermit();
    }
  }

  const detail::SenderHandle<T>* sender_;
  spool::detail::MpscChan<T>* chan_;
  std::optional<SemaphoreAcquire> acquire_;  // an optional only to be destroyed first
  bool room_taken_ = false;                  // poll_room handed the room out
};

/// The future of Sender::send: ready with true once the value is queued, with false (the
/// value dropped) when the receiver is gone or closed. Cancellation: destroyed while it
/// waits for room, the value is dropped and nothing is queued; room already given to it
/// passes to the next sender. Movable until first polled; moving it while it waits throws
/// std::logic_error. It must not outlive its Sender.
template <class T>
class Send {
 public:
  /// Ready once sent (true) or refused (false); pending while the channel is full.
  Poll<bool> poll(Context& cx) {
    std::optional<SemaphorePermit> room = reserve_.poll_room(cx);
    if (!room) return pending;
    if (room->num_permits() == 0) return false;  // refused: the receiver is gone or closed
    room->forget();                              // the slot's permit now travels with the value
    reserve_.chan_->push(std::move(value_));
    return true;
  }

 private:
  friend class Sender<T>;
  Send(const detail::SenderHandle<T>& sender, spool::detail::MpscChan<T>* chan, T value)
      : reserve_(sender, chan), value_(std::move(value)) {}
  Reserve<T> reserve_;
  T value_;
};

/// The sending half of a bounded channel. Copy it for more producers; the channel ends for
/// the receiver when every copy is gone (and the queue is drained). Thread-safe: copies may
/// send from any threads at once.
template <class T>
class Sender : public detail::SenderHandle<T> {
 public:
  /// A future that queues `value`, waiting while the channel is full (see Send).
  Send<T> send(T value) const {
    return Send<T>(*this, &this->chan("Sender::send"), std::move(value));
  }
  /// A future of room for one value (see Reserve, Permit): reserve first, compute the value,
  /// then send it without waiting.
  Reserve<T> reserve() const { return Reserve<T>(*this, &this->chan("Sender::reserve")); }
  /// Queues `value` now if there is room: see TrySendResult (the value is moved from only
  /// when it is kSent).
  TrySendResult try_send(T&& value) const {
    auto& c = this->chan("Sender::try_send");
    if (c.receiver_closed()) return TrySendResult::kClosed;
    std::optional<SemaphorePermit> p;
    try {
      p = c.permits().try_acquire(1);
    } catch (const AcquireError&) {
      return TrySendResult::kClosed;
    }
    if (!p) return TrySendResult::kFull;
    p->forget();  // the slot's permit now travels with the value
    c.push(std::move(value));
    return TrySendResult::kSent;
  }
  /// Room left now (free slots not reserved by any sender).
  std::size_t capacity() const {
    return this->chan("Sender::capacity").permits().available_permits();
  }

 private:
  friend std::pair<Sender<T>, Receiver<T>> channel<T>(std::size_t capacity);
  explicit Sender(std::shared_ptr<spool::detail::MpscChan<T>> chan) noexcept
      : detail::SenderHandle<T>(std::move(chan)) {}
};

/// The sending half of an unbounded channel: send never waits. Copy it for more producers.
/// Thread-safe: copies may send from any threads at once.
template <class T>
class UnboundedSender : public detail::SenderHandle<T> {
 public:
  /// Queues `value`. Returns false (and drops the value) when the receiver is gone or
  /// closed.
  bool send(T value) const {
    return this->chan("UnboundedSender::send").push_unless_closed(std::move(value));
  }

 private:
  friend std::pair<UnboundedSender<T>, Receiver<T>> unbounded_channel<T>();
  explicit UnboundedSender(std::shared_ptr<spool::detail::MpscChan<T>> chan) noexcept
      : detail::SenderHandle<T>(std::move(chan)) {}
};

/// The future of Receiver::recv: ready with the next value, or with nullopt once every
/// sender is gone (or the receiver closed) and the queue is drained. Cancellation: destroying
/// it loses nothing (a value is taken out of the queue only by the poll that returns it). It
/// must not outlive its Receiver. Spends one unit of the task's cooperative budget per poll.
template <class T>
class Recv {
 public:
  /// Ready with the next value (or nullopt: the end); pending while the queue is empty.
  Poll<std::optional<T>> poll(Context& cx) {
    // The value goes straight into the returned Poll (its one object: no copy).
    Poll<std::optional<T>> out = Poll<std::optional<T>>::ready();
    if (!spool::detail::coop_poll_proceed(cx) ||
        chan_->poll_recv(&cx, out.value()) == spool::detail::MpscChan<T>::Recv::kPending) {
      out = pending;
    }
    return out;
  }

 private:
  friend class Receiver<T>;
  explicit Recv(spool::detail::MpscChan<T>* chan) noexcept : chan_(chan) {}
  spool::detail::MpscChan<T>* chan_;
};

/// The future of Receiver::recv_many: waits for at least one value, then appends up to
/// `limit` of those queued to the vector; ready with how many it appended (0: the end, or
/// limit 0). Cancellation as Recv. The vector grows before a value leaves the channel, so
/// only a T whose move constructor throws can lose the value being appended. It must not
/// outlive its Receiver or the vector.
template <class T>
class RecvMany {
 public:
  /// Ready with the count appended; pending while the queue is empty.
  Poll<std::size_t> poll(Context& cx) {
    if (limit_ == 0) return std::size_t{0};
    if (!spool::detail::coop_poll_proceed(cx)) return pending;
    using Recv = typename spool::detail::MpscChan<T>::Recv;
    make_room();
    std::optional<T> v;
    Recv r = chan_->poll_recv(&cx, v);
    if (r == Recv::kPending) return pending;
    std::size_t n = 0;
    while (r == Recv::kValue) {
      out_->push_back(std::move(*v));  // room was made before the value left the channel
      v.reset();
      if (++n == limit_) break;
      make_room();
      r = chan_->poll_recv(nullptr, v);
    }
    return n;
  }

 private:
  friend class Receiver<T>;
  // Grows the vector (geometrically) before a value is taken out of the channel, so that
  // appending it cannot fail for want of memory once it is out.
  void make_room() {
    if (out_->size() == out_->capacity()) out_->reserve(std::max<std::size_t>(8, 2 * out_->size()));
  }
  RecvMany(spool::detail::MpscChan<T>* chan, std::vector<T>* out, std::size_t limit) noexcept
      : chan_(chan), out_(out), limit_(limit) {}
  spool::detail::MpscChan<T>* chan_;
  std::vector<T>* out_;
  std::size_t limit_;
};

/// The receiving half of a channel (bounded or unbounded). One receiver: it is move only,
/// and one task at a time receives. Destroying it closes the channel (senders are refused
/// from then on) and destroys the values still queued.
template <class T>
class Receiver {
 public:
  /// Takes over the channel (the source is left empty: using it throws std::logic_error).
  Receiver(Receiver&&) noexcept = default;
  /// Drops this receiver's channel (as the destructor), then takes over `o`'s.
  Receiver& operator=(Receiver&& o) noexcept {
    if (this != &o) {
      drop();
      chan_ = std::move(o.chan_);
    }
    return *this;
  }
  /// Closes the channel (senders' sends then fail) and destroys the values still queued.
  ~Receiver() { drop(); }

  /// A future of the next value (see Recv): `while (auto v = co_await rx.recv()) ...`.
  Recv<T> recv() { return Recv<T>(&chan("recv")); }
  /// The Stream interface (spool/stream/stream.hpp): recv().poll(cx). After the end it
  /// gives nullopt again.
  Poll<std::optional<T>> poll_next(Context& cx) { return recv().poll(cx); }
  /// A future that appends up to `limit` values to `out` (see RecvMany).
  RecvMany<T> recv_many(std::vector<T>& out, std::size_t limit) {
    return RecvMany<T>(&chan("recv_many"), &out, limit);
  }
  /// The next value if one is queued now. nullopt either way when there is none: is_closed()
  /// then tells whether more may come.
  std::optional<T> try_recv() {
    std::optional<T> v;
    chan("try_recv").poll_recv(nullptr, v);
    return v;
  }
  /// Closes the channel from this side: later sends are refused (and senders waiting for
  /// room are woken and refused); the values already queued can still be received.
  void close() { chan("close").close_receiver(); }
  /// True when no more values can be queued: every sender is gone or the receiver closed
  /// (values queued before may still be waiting to be received).
  bool is_closed() const { return chan("is_closed").no_more_sends(); }

 private:
  friend std::pair<Sender<T>, Receiver<T>> channel<T>(std::size_t capacity);
  friend std::pair<UnboundedSender<T>, Receiver<T>> unbounded_channel<T>();
  explicit Receiver(std::shared_ptr<spool::detail::MpscChan<T>> chan) noexcept
      : chan_(std::move(chan)) {}
  spool::detail::MpscChan<T>& chan(const char* what) const {
    if (!chan_) {
      throw std::logic_error(std::string("spool::mpsc::Receiver::") + what +
                             " on a moved-from receiver");
    }
    return *chan_;
  }
  void drop() noexcept {
    if (!chan_) return;
    chan_->close_receiver();
    chan_->drop_queued();
    chan_.reset();
  }

  std::shared_ptr<spool::detail::MpscChan<T>> chan_;
};

/// A bounded channel with room for `capacity` values: {sender, receiver}. A send waits
/// while it is full. Throws std::invalid_argument for a capacity of 0 or above max_capacity.
template <class T>
std::pair<Sender<T>, Receiver<T>> channel(std::size_t capacity) {
  if (capacity == 0 || capacity > max_capacity) {
    throw std::invalid_argument(
        "spool::mpsc::channel(" + std::to_string(capacity) +
        "): the capacity must be between 1 and spool::mpsc::max_capacity (" +
        std::to_string(max_capacity) + "); for no bound, use spool::mpsc::unbounded_channel");
  }
  auto chan = std::make_shared<spool::detail::MpscChan<T>>(capacity);
  return {Sender<T>(chan), Receiver<T>(chan)};
}

/// An unbounded channel: {sender, receiver}. A send never waits (memory is the bound).
template <class T>
std::pair<UnboundedSender<T>, Receiver<T>> unbounded_channel() {
  auto chan = std::make_shared<spool::detail::MpscChan<T>>(std::nullopt);
  return {UnboundedSender<T>(chan), Receiver<T>(chan)};
}

}  // namespace spool::mpsc
