// spool::stream::WatchStream: a watch::Receiver as a spool::Stream.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/sync/watch.hpp"

namespace spool::stream {

/// A watch::Receiver as a spool::Stream of copies of the channel's value (tokio-stream's
/// WatchStream): the value it holds first, then each newer version as it comes (versions
/// sent between two polls are coalesced into the latest, as watch does). It ends once every
/// sender is gone and it has given the last version. Owns the receiver, on the heap with
/// the change it waits for, so the stream moves freely, even while it waits.
template <class T>
class WatchStream {
 public:
  /// The stream of `rx`'s values, starting with the one it holds now.
  explicit WatchStream(watch::Receiver<T> rx)
      : state_(std::make_unique<State>(State{std::move(rx), std::nullopt})) {}
  /// The stream of `rx`'s values sent from now on (the one it holds now is not given).
  static WatchStream from_changes(watch::Receiver<T> rx) {
    WatchStream s(std::move(rx));
    (void)s.state_->rx.borrow_and_update();
    s.first_ = false;
    return s;
  }

  /// The next value, nullopt once the channel is closed and its last value given. Throws
  /// std::logic_error on a moved-from stream.
  Poll<std::optional<T>> poll_next(Context& cx) {
    using Item = std::optional<T>;
    if (!state_) throw std::logic_error("spool::stream::WatchStream polled after a move from it");
    State& s = *state_;
    if (!first_) {
      if (!s.changed) s.changed.emplace(s.rx.changed());
      Poll<bool> changed = s.changed->poll(cx);
      if (changed.is_pending()) return pending;
      s.changed.reset();
      if (!changed.value()) return Poll<Item>(std::nullopt);
    }
    first_ = false;
    return Poll<Item>(Item(*s.rx.borrow_and_update()));
  }

  /// The receiver (for borrow(), has_changed(), ...).
  watch::Receiver<T>& receiver() noexcept { return state_->rx; }

 private:
  struct State {
    watch::Receiver<T> rx;
    std::optional<watch::Changed<T>> changed;  // the wait in progress, kept across polls
  };
  std::unique_ptr<State> state_;
  bool first_ = true;  // the value held at the start is still to give
};

}  // namespace spool::stream
