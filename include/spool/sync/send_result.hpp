// spool::SendResult: what a send that never waits did — delivered, or refused with the value
// handed back (broadcast::Sender::send, watch::Sender::send; tokio's SendError).
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <utility>

#include "spool/config.hpp"

namespace spool {

/// The outcome of a send that never waits: either sent, reaching receivers() receivers, or
/// refused because the channel had no receiver, in which case the value comes back
/// (value()). `if (tx.send(v))` tests that it was sent; ignoring a refusal is fine when
/// nobody listening is not an error for the program.
template <class T>
class SendResult {
 public:
  /// Sent, to `receivers` receivers.
  static SendResult sent(std::size_t receivers) noexcept {
    SendResult r;
    r.receivers_ = receivers;
    return r;
  }
  /// Refused: the channel had no receiver; `value` comes back to the caller.
  static SendResult refused(T&& value) {
    SendResult r;
    r.value_.emplace(std::move(value));
    return r;
  }

  /// True when the value was sent.
  bool is_sent() const noexcept { return !value_.has_value(); }
  /// Same as is_sent().
  explicit operator bool() const noexcept { return is_sent(); }
  /// How many receivers the value was sent to (0 when refused).
  std::size_t receivers() const noexcept { return receivers_; }
  /// The refused value. Throws std::logic_error when the value was sent (it is the
  /// receivers' now).
  T& value() & {
    if (!value_) throw_sent();
    return *value_;
  }
  /// The refused value, moved out. Throws std::logic_error when the value was sent.
  T&& value() && {
    if (!value_) throw_sent();
    return std::move(*value_);
  }

 private:
  SendResult() = default;
  [[noreturn]] static void throw_sent() {
    throw std::logic_error(
        "spool::SendResult::value(): the value was sent, so it was not handed back; check "
        "is_sent() first");
  }
  std::optional<T> value_;  // the refused value; empty when sent
  std::size_t receivers_ = 0;
};

}  // namespace spool
