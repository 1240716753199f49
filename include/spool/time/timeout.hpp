// spool::timeout and spool::timeout_at: run a future with a deadline.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "spool/core/future.hpp"
#include "spool/time/sleep.hpp"

namespace spool {

/// Thrown by TimeoutResult::value() when the deadline came first.
class Elapsed : public std::runtime_error {
 public:
  Elapsed()
      : std::runtime_error("spool::timeout: the deadline elapsed before the future completed") {}
};

/// What a Timeout produces: the inner future's value, or the fact that the deadline came
/// first (tokio's Result<T, Elapsed>).
template <class T>
class TimeoutResult {
 public:
  /// The inner future completed in time with `value`.
  static TimeoutResult completed(T value) { return TimeoutResult(std::move(value)); }
  /// The deadline came first.
  static TimeoutResult elapsed_result() { return TimeoutResult(); }
  /// True when the deadline came first (the inner future was destroyed unfinished).
  bool elapsed() const noexcept { return !value_.has_value(); }
  /// True when the inner future completed in time.
  explicit operator bool() const noexcept { return value_.has_value(); }
  /// The inner future's value; throws spool::Elapsed when the deadline came first.
  T& value() & {
    if (!value_) throw Elapsed();
    return *value_;
  }
  /// The inner future's value, moved out; throws spool::Elapsed when the deadline came first.
  T&& value() && {
    if (!value_) throw Elapsed();
    return std::move(*value_);
  }

 private:
  TimeoutResult() = default;
  explicit TimeoutResult(T value) : value_(std::move(value)) {}
  std::optional<T> value_;
};

/// TimeoutResult of a future with no value.
template <>
class TimeoutResult<void> {
 public:
  /// The inner future completed in time.
  static TimeoutResult completed() { return TimeoutResult(false); }
  /// The deadline came first.
  static TimeoutResult elapsed_result() { return TimeoutResult(true); }
  /// True when the deadline came first (the inner future was destroyed unfinished).
  bool elapsed() const noexcept { return elapsed_; }
  /// True when the inner future completed in time.
  explicit operator bool() const noexcept { return !elapsed_; }
  /// Throws spool::Elapsed when the deadline came first.
  void value() const {
    if (elapsed_) throw Elapsed();
  }

 private:
  explicit TimeoutResult(bool elapsed) : elapsed_(elapsed) {}
  bool elapsed_;
};

/// A future that polls `F` until it completes or the deadline passes, whichever comes
/// first. The inner future is polled first, so one that is ready at once never arms the
/// timer; when the deadline wins, the inner future is destroyed at once (its destructors
/// run) and the result says elapsed. The deadline is that of a spool::Sleep (the same
/// clock, and the same executors).
template <Future F>
class Timeout {
 public:
  /// The type the inner future produces.
  using Output = future_output_t<F>;

  /// Polls the inner future, then the deadline.
  Poll<TimeoutResult<Output>> poll(Context& cx) {
    if (!inner_) {
      throw std::logic_error("spool::Timeout polled again after it completed");
    }
    auto p = inner_->poll(cx);
    if (p.is_ready()) {
      inner_.reset();
      if constexpr (std::is_void_v<Output>) {
        return Poll<TimeoutResult<Output>>::ready(TimeoutResult<Output>::completed());
      } else {
        return Poll<TimeoutResult<Output>>::ready(
            TimeoutResult<Output>::completed(std::move(p).value()));
      }
    }
    if (sleep_.poll(cx).is_pending()) return pending;
    inner_.reset();  // the deadline won: the inner future goes now, not with the Timeout
    return Poll<TimeoutResult<Output>>::ready(TimeoutResult<Output>::elapsed_result());
  }
  /// The instant the deadline passes.
  Instant deadline() const noexcept { return sleep_.deadline(); }

  /// Wraps `inner` with the deadline of `sleep`.
  Timeout(F inner, Sleep sleep) : inner_(std::move(inner)), sleep_(std::move(sleep)) {}

 private:
  std::optional<F> inner_;
  Sleep sleep_;
};

/// Runs `fut` (moved in) with a deadline `duration` from now. co_await gives a
/// TimeoutResult: the value, or elapsed.
template <Future F>
Timeout<std::decay_t<F>> timeout(std::chrono::nanoseconds duration, F&& fut) {
  return Timeout<std::decay_t<F>>(std::forward<F>(fut), sleep(duration));
}

/// Runs `fut` (moved in) with the deadline `deadline`.
template <Future F>
Timeout<std::decay_t<F>> timeout_at(Instant deadline, F&& fut) {
  return Timeout<std::decay_t<F>>(std::forward<F>(fut), sleep_until(deadline));
}

}  // namespace spool
