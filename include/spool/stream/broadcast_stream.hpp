// spool::stream::BroadcastStream: a broadcast::Receiver as a spool::Stream.
#pragma once

#include <optional>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/waiter_list.hpp"
#include "spool/sync/broadcast.hpp"

namespace spool::stream {

/// A broadcast::Receiver as a spool::Stream (tokio-stream's BroadcastStream). Its items are
/// the receives' outcomes: a message, or a lag (RecvResult::lagged(); the stream goes on
/// from the oldest message still held). It ends when every sender is gone and it has read
/// every message left. Owns the receiver. A pending receive waits in the channel's queue, so
/// the stream must not move while one is pending (moving it then throws std::logic_error).
template <class T>
class BroadcastStream {
 public:
  /// The stream of `rx`'s messages.
  explicit BroadcastStream(broadcast::Receiver<T> rx) : rx_(std::move(rx)) {}
  /// Takes `o`'s receiver over. Throws std::logic_error while `o`'s receive waits in the
  /// channel's queue; one that does not wait (refused by the task's budget) borrows `o`'s
  /// receiver, so it is dropped (losing nothing) and this stream starts its own.
  BroadcastStream(BroadcastStream&& o) : rx_(std::move(o.receiver_to_move())) {}
  BroadcastStream& operator=(BroadcastStream&&) = delete;

  /// The next outcome (never a closed one: that is the end, nullopt).
  Poll<std::optional<broadcast::RecvResult<T>>> poll_next(Context& cx) {
    using Item = std::optional<broadcast::RecvResult<T>>;
    if (!recv_) recv_.emplace(rx_.recv());
    Poll<broadcast::RecvResult<T>> outcome = recv_->poll(cx);
    if (outcome.is_pending()) return pending;
    recv_.reset();
    if (outcome.value().closed()) return Poll<Item>(std::nullopt);
    return Poll<Item>(std::move(outcome).value());
  }

  /// The receiver (for len(), resubscribe(), ...).
  broadcast::Receiver<T>& receiver() noexcept { return rx_; }

 private:
  // The receiver, once no receive of it is left in progress; throws if one waits.
  broadcast::Receiver<T>& receiver_to_move() {
    if (recv_ && recv_->is_waiting()) {
      spool::detail::throw_moved_while_waiting("spool::stream::BroadcastStream");
    }
    recv_.reset();
    return rx_;
  }

  broadcast::Receiver<T> rx_;
  std::optional<broadcast::Recv<T>> recv_;  // the receive in progress, kept across polls
};

}  // namespace spool::stream
