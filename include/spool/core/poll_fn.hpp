// spool::poll_fn: a future whose poll is a callable over Context&.
#pragma once

#include <type_traits>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool {

/// A future whose `poll(cx)` calls `f(cx)`, a callable returning a `Poll<T>`. It follows the
/// Future contract only as far as `f` does: a pending `f` must have stored (a clone of)
/// `cx.waker()` to wake. Movable until first polled when `F` is (it holds `f` by value).
template <class F>
requires is_poll_v<std::invoke_result_t<F&, Context&>>
class [[nodiscard]] PollFn {
 public:
  /// Wraps `f`.
  explicit PollFn(F f) noexcept(std::is_nothrow_move_constructible_v<F>) : f_(std::move(f)) {}
  /// Returns `f(cx)`.
  std::invoke_result_t<F&, Context&> poll(Context& cx) { return f_(cx); }

 private:
  F f_;
};

/// A future from a callable `Poll<T>(Context&)`, e.g.
/// `spool::poll_fn([&](spool::Context& cx) -> spool::Poll<int> { ... })`. With g++ 12, build
/// it in a named variable before `co_await`ing it when the lambda captures by value
/// (docs/core.md: a g++ 12 bug destroys such temporaries twice).
template <class F>
PollFn<std::decay_t<F>> poll_fn(F&& f) {
  return PollFn<std::decay_t<F>>(std::forward<F>(f));
}

}  // namespace spool
