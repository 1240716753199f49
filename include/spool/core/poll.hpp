// spool::Poll<T>: the result of polling a future — ready with a value, or pending.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "spool/config.hpp"

namespace spool {

/// Tag for a pending poll result: `return spool::pending;` from any `poll`.
struct PendingTag {
  /// Explicit, so that `return {};` does not mean pending (spool::pending is the one value).
  explicit constexpr PendingTag(int) {}
};
/// The pending value, convertible to every `Poll<T>`.
inline constexpr PendingTag pending{0};

namespace detail {
[[noreturn]] inline void throw_poll_not_ready() {
  throw std::logic_error(
      "spool::Poll::value() called on a pending Poll: check is_ready() before taking the value");
}
}  // namespace detail

/// The outcome of one `poll`: either ready with a `T`, or pending (the future stored the
/// context's waker and will wake it when progress is possible). `T` may be an object type
/// (move-only included), a reference, or void (`Poll<void>`). There is no default
/// constructor: `return {};` would not say whether it means ready or pending, so it does not
/// compile; write `return spool::pending;` or `return Poll<T>::ready(...);`.
template <class T>
class Poll {
 public:
  /// The type a ready poll carries.
  using value_type = T;

  /// None: `{}` would not say whether it is ready or pending (see the class comment).
  Poll() = delete;  // `return {};`? write `spool::pending` or `Poll<T>::ready(...)`
  /// A pending result (`return spool::pending;`).
  constexpr Poll(PendingTag) {
  }  // NOLINT(google-explicit-constructor): mirrors Rust's Poll::Pending
  /// A ready result holding `value` (`return value;` from a poll that returns Poll<T>).
  template <class U = T>
  requires std::is_constructible_v<T, U&&> &&(!std::is_same_v<std::remove_cvref_t<U>, Poll>)&&(
      !std::is_same_v<std::remove_cvref_t<U>,
                      PendingTag>)constexpr Poll(U&& value)  // NOLINT(google-explicit-constructor)
      : value_(std::in_place, std::forward<U>(value)) {}

  /// Makes this result pending again, destroying the value it held (`p = spool::pending;`);
  /// works for a T that cannot be move-assigned.
  constexpr Poll& operator=(PendingTag) noexcept {
    value_.reset();
    return *this;
  }

  /// A ready result built in place from `args`.
  template <class... Args>
  static constexpr Poll ready(Args&&... args) {
    Poll p(pending);
    p.value_.emplace(std::forward<Args>(args)...);
    return p;
  }

  /// True when the poll produced a value.
  constexpr bool is_ready() const noexcept { return value_.has_value(); }
  /// True when the future is not finished yet.
  constexpr bool is_pending() const noexcept { return !value_.has_value(); }
  /// Same as is_ready().
  constexpr explicit operator bool() const noexcept { return is_ready(); }

  /// The value; throws std::logic_error when pending.
  constexpr T& value() & {
    if (!value_) detail::throw_poll_not_ready();
    return *value_;
  }
  /// The value; throws std::logic_error when pending.
  constexpr const T& value() const& {
    if (!value_) detail::throw_poll_not_ready();
    return *value_;
  }
  /// The value, moved out; throws std::logic_error when pending.
  constexpr T&& value() && {
    if (!value_) detail::throw_poll_not_ready();
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

/// Poll<T&>: a ready result refers to an object owned elsewhere.
template <class T>
class Poll<T&> {
 public:
  /// The type a ready poll carries.
  using value_type = T&;

  /// None: `{}` would not say whether it is ready or pending (see the class comment).
  Poll() = delete;  // `return {};`? write `spool::pending` or `Poll<T&>::ready(x)`
  /// A pending result (`return spool::pending;`).
  constexpr Poll(PendingTag) {}  // NOLINT(google-explicit-constructor)
  /// A ready result referring to `ref`.
  constexpr Poll(T& ref) : ptr_(std::addressof(ref)) {}  // NOLINT(google-explicit-constructor)
  /// A ready result referring to `ref`.
  static constexpr Poll ready(T& ref) { return Poll(ref); }

  /// True when the poll produced a value.
  constexpr bool is_ready() const noexcept { return ptr_ != nullptr; }
  /// True when the future is not finished yet.
  constexpr bool is_pending() const noexcept { return ptr_ == nullptr; }
  /// Same as is_ready().
  constexpr explicit operator bool() const noexcept { return is_ready(); }
  /// The referenced object; throws std::logic_error when pending.
  constexpr T& value() const {
    if (!ptr_) detail::throw_poll_not_ready();
    return *ptr_;
  }

 private:
  T* ptr_ = nullptr;
};

/// Poll<void>: ready or pending, with nothing to carry. Each is spelled out —
/// `return Poll<void>::ready();` or `return spool::pending;` — since `return {};` does not
/// compile (see Poll).
template <>
class Poll<void> {
 public:
  /// The type a ready poll carries.
  using value_type = void;

  /// None: `{}` would not say whether it is ready or pending (see the class comment).
  Poll() = delete;  // `return {};`? write `spool::pending` or `Poll<void>::ready()`
  /// A pending result (`return spool::pending;`).
  constexpr Poll(PendingTag) {}  // NOLINT(google-explicit-constructor)
  /// A ready result.
  static constexpr Poll ready() {
    Poll p(pending);
    p.ready_ = true;
    return p;
  }

  /// True when the poll completed.
  constexpr bool is_ready() const noexcept { return ready_; }
  /// True when the future is not finished yet.
  constexpr bool is_pending() const noexcept { return !ready_; }
  /// Same as is_ready().
  constexpr explicit operator bool() const noexcept { return ready_; }
  /// Throws std::logic_error when pending; does nothing when ready.
  constexpr void value() const {
    if (!ready_) detail::throw_poll_not_ready();
  }

 private:
  bool ready_ = false;
};

/// True for every specialisation of Poll.
template <class P>
inline constexpr bool is_poll_v = false;
/// The specialisation that makes is_poll_v true for Poll<T>.
template <class T>
inline constexpr bool is_poll_v<Poll<T>> = true;

}  // namespace spool
