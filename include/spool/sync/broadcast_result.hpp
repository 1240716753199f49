// spool::broadcast receive outcomes: RecvStatus, RecvResult<T> and RecvError.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <utility>

#include "spool/config.hpp"

namespace spool::detail {
template <class T>
class BroadcastChan;
}  // namespace spool::detail

namespace spool::broadcast {

/// What a receive gave.
enum class RecvStatus : std::uint8_t {
  kValue,   ///< the next message
  kEmpty,   ///< (try_recv only) no message now; more may come
  kLagged,  ///< the receiver fell behind: RecvResult::missed() messages were overwritten before
            ///< it read them; its next receive gives the oldest message still held
  kClosed,  ///< every sender is gone and the receiver has read every message left
};

/// Thrown by RecvResult::value() when the receive gave no message; status() and missed()
/// say why (the message says it in words).
class SPOOL_API RecvError : public std::runtime_error {
 public:
  /// The error for an outcome other than kValue (`missed`: the lag, for kLagged).
  RecvError(RecvStatus status, std::uint64_t missed);
  /// Why no message came (never kValue).
  RecvStatus status() const noexcept { return status_; }
  /// How many messages the receiver missed (kLagged; 0 otherwise).
  std::uint64_t missed() const noexcept { return missed_; }

 private:
  RecvStatus status_;
  std::uint64_t missed_;
};

/// The outcome of Receiver::recv / try_recv: a message (a copy of the one sent, or the
/// original moved out for the last receiver to read it), or why there is none. The usual
/// loop:
///
///     for (;;) {
///       auto r = co_await rx.recv();
///       if (r) use(*r);
///       else if (r.closed()) break;
///       // else r.lagged(): r.missed() messages were lost; the loop goes on from the oldest
///     }
///
/// value() gives the message or throws RecvError, for code that treats a gap as an error.
template <class T>
class RecvResult {
 public:
  /// An empty result (kEmpty); receives fill one in place.
  RecvResult() = default;

  /// What the receive gave.
  RecvStatus status() const noexcept { return status_; }
  /// True when it holds a message.
  bool has_value() const noexcept { return status_ == RecvStatus::kValue; }
  /// Same as has_value().
  explicit operator bool() const noexcept { return has_value(); }
  /// True when the receiver lagged (see RecvStatus::kLagged).
  bool lagged() const noexcept { return status_ == RecvStatus::kLagged; }
  /// True when the channel is closed and drained for this receiver.
  bool closed() const noexcept { return status_ == RecvStatus::kClosed; }
  /// True when try_recv found no message (more may come).
  bool empty() const noexcept { return status_ == RecvStatus::kEmpty; }
  /// How many messages were missed (kLagged; 0 otherwise).
  std::uint64_t missed() const noexcept { return missed_; }

  /// The message; throws RecvError (saying why) when there is none.
  T& value() & {
    check();
    return *value_;
  }
  /// The message; throws RecvError (saying why) when there is none.
  const T& value() const& {
    check();
    return *value_;
  }
  /// The message, moved out; throws RecvError when there is none.
  T&& value() && {
    check();
    return std::move(*value_);
  }
  /// The message; throws RecvError when there is none (as value()).
  T& operator*() & { return value(); }
  /// The message; throws RecvError when there is none (as value()).
  const T& operator*() const& { return value(); }
  /// The message, moved out; throws RecvError when there is none (as value()).
  T&& operator*() && { return std::move(*this).value(); }
  /// The message; throws RecvError when there is none (as value()).
  T* operator->() { return &value(); }
  /// The message; throws RecvError when there is none (as value()).
  const T* operator->() const { return &value(); }

 private:
  friend class spool::detail::BroadcastChan<T>;
  void check() const {
    if (!has_value()) throw RecvError(status_, missed_);
  }
  std::optional<T> value_;
  RecvStatus status_ = RecvStatus::kEmpty;
  std::uint64_t missed_ = 0;
};

}  // namespace spool::broadcast
