// spool::stream::timeout and throttle: adapters on spool's timers (spool::sleep, so they run
// under any executor, like every spool timer).
// (Stream ownership as in spool/stream/adapters.hpp: an rvalue is moved in, an lvalue borrowed.)
#pragma once

#include <chrono>
#include <optional>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/stream/stream.hpp"
#include "spool/time/sleep.hpp"
#include "spool/time/timeout.hpp"

namespace spool::detail {
// `sleep` due `d` from now: the one Sleep an adapter keeps, made at its first use and reset
// after that (no Sleep made, and no count of the driver's taken, per deadline).
inline void rearm(std::optional<Sleep>& sleep, std::chrono::nanoseconds d) {
  if (sleep) {
    sleep->reset_after(d);
  } else {
    sleep.emplace(spool::sleep(d));
  }
}
}  // namespace spool::detail

namespace spool::stream {

/// `S`'s items, each with a deadline (see stream::timeout).
template <class S>
class Timeout {
 public:
  /// The type of the inner stream's items.
  using Item = stream_item_t<S>;

  /// Gives each of `inner`'s items `limit` to come. Throws std::invalid_argument when
  /// `limit` is negative.
  Timeout(S&& inner, std::chrono::nanoseconds limit)
      : inner_(std::forward<S>(inner)), limit_(limit) {
    spool::detail::check_stream_duration(limit, "timeout");
  }

  /// The next item (completed), or elapsed when it did not come within the limit of the
  /// first poll that asked for it; the stream then goes on waiting for that item, with a
  /// new limit. The end is the inner stream's.
  Poll<std::optional<TimeoutResult<Item>>> poll_next(Context& cx) {
    using Out = std::optional<TimeoutResult<Item>>;
    auto p = inner_.poll_next(cx);
    if (p.is_ready()) {
      // The next item gets a deadline of its own. One still armed is destroyed to disarm
      // it (a reset would arm it again); one that fired is unlinked and kept for reuse.
      if (armed_) deadline_.reset();
      armed_ = false;
      if (!p.value()) return Poll<Out>(std::nullopt);
      return Poll<Out>(TimeoutResult<Item>::completed(std::move(*p.value())));
    }
    if (!armed_) spool::detail::rearm(deadline_, limit_);
    armed_ = true;
    if (deadline_->poll(cx).is_pending()) return pending;
    armed_ = false;
    return Poll<Out>(TimeoutResult<Item>::elapsed_result());
  }

 private:
  spool::detail::Fused<S> inner_;
  std::chrono::nanoseconds limit_;
  std::optional<Sleep> deadline_;  // the deadline of the item being waited for, while armed_
  bool armed_ = false;             // deadline_ runs for the item being waited for
};

/// `S`'s items, at most one per period (see stream::throttle).
template <class S>
class Throttle {
 public:
  /// Spaces `inner`'s items by `period`. Throws std::invalid_argument when it is negative.
  Throttle(S&& inner, std::chrono::nanoseconds period)
      : inner_(std::forward<S>(inner)), period_(period) {
    spool::detail::check_stream_duration(period, "throttle");
  }

  /// The next item, not before `period` has passed since the previous one was given (the
  /// inner stream is not polled meanwhile: it is slowed down, nothing is dropped).
  Poll<std::optional<stream_item_t<S>>> poll_next(Context& cx) {
    if (pausing_) {
      if (pause_->poll(cx).is_pending()) return pending;
      pausing_ = false;  // pause_ fired: unlinked, kept to be reset for the next item
    }
    auto p = inner_.poll_next(cx);
    if (p.is_ready() && p.value() && period_.count() > 0) {
      spool::detail::rearm(pause_, period_);
      pausing_ = true;
    }
    return p;
  }

 private:
  spool::detail::Fused<S> inner_;
  std::chrono::nanoseconds period_;
  std::optional<Sleep> pause_;  // made at the first item, reset at each next one
  bool pausing_ = false;        // pause_ runs: the next item waits for it
};

/// `s`'s items as spool::TimeoutResult: completed(item), or elapsed when an item did not
/// come within `limit` (the stream goes on: the next poll waits for it again; tokio-stream's
/// StreamExt::timeout). Throws std::invalid_argument for a negative limit.
template <class S>
requires Stream<std::remove_reference_t<S>> Timeout<S> timeout(S&& s,
                                                               std::chrono::nanoseconds limit) {
  return Timeout<S>(std::forward<S>(s), limit);
}

/// `s`'s items, the first at once and each next one at least `period` after the one before
/// (tokio-stream's StreamExt::throttle). Throws std::invalid_argument for a negative period.
template <class S>
requires Stream<std::remove_reference_t<S>> Throttle<S> throttle(S&& s,
                                                                 std::chrono::nanoseconds period) {
  return Throttle<S>(std::forward<S>(s), period);
}

}  // namespace spool::stream
