// spool::stream::map, filter, take, take_while: item-by-item adapters over any spool::Stream.
//
// Every adapter takes its stream by forwarding reference: an rvalue is moved in and owned,
// an lvalue is borrowed (it must outlive the adapter). Adapters are Streams themselves, do
// nothing until polled, and run under any executor. They never poll their stream after its
// end: polled again after their own end, they give nullopt again (map, filter and the timed
// adapters through detail::Fused, the others through their own state).
// Polls are built in place (`Poll<Out>(value)`), never through Poll::ready: g++ 12 -O1 warns
// -Wmaybe-uninitialized when ready() copies out an empty optional.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/stream/stream.hpp"

namespace spool::stream {

/// The items of `S` passed through `f` (see stream::map).
template <class S, class F>
class Map {
 public:
  /// The type f returns, as a value (a returned reference is copied into the item).
  using Item = std::remove_cvref_t<std::invoke_result_t<F&, stream_item_t<S>&&>>;
  static_assert(!std::is_void_v<Item>, "spool::stream::map: the function must return a value");

  /// Maps `inner`'s items with `f`.
  Map(S&& inner, F f) : inner_(std::forward<S>(inner)), f_(std::move(f)) {}

  /// The next item of the inner stream, mapped.
  Poll<std::optional<Item>> poll_next(Context& cx) {
    auto p = inner_.poll_next(cx);
    if (p.is_pending()) return pending;
    if (!p.value()) return Poll<std::optional<Item>>(std::nullopt);
    return Poll<std::optional<Item>>(std::invoke(f_, std::move(*p.value())));
  }

 private:
  spool::detail::Fused<S> inner_;
  F f_;
};

/// The items of `S` for which `pred` is true (see stream::filter).
template <class S, class P>
class Filter {
 public:
  /// Keeps `inner`'s items that satisfy `pred`.
  Filter(S&& inner, P pred) : inner_(std::forward<S>(inner)), pred_(std::move(pred)) {}

  /// The next item that satisfies the predicate (polls the inner stream until one comes,
  /// it ends, or it is pending).
  Poll<std::optional<stream_item_t<S>>> poll_next(Context& cx) {
    for (;;) {
      auto p = inner_.poll_next(cx);
      if (p.is_pending() || !p.value() || std::invoke(pred_, std::as_const(*p.value()))) return p;
    }
  }

 private:
  spool::detail::Fused<S> inner_;
  P pred_;
};

/// The first `n` items of `S` (see stream::take).
template <class S>
class Take {
 public:
  /// Takes up to `n` of `inner`'s items.
  Take(S&& inner, std::size_t n) : inner_(std::forward<S>(inner)), left_(n) {}

  /// The next item, or the end once `n` were given (the inner stream is not polled again).
  Poll<std::optional<stream_item_t<S>>> poll_next(Context& cx) {
    if (left_ == 0) return Poll<std::optional<stream_item_t<S>>>(std::nullopt);
    auto p = inner_.poll_next(cx);
    if (p.is_ready()) left_ = p.value() ? left_ - 1 : 0;
    return p;
  }

 private:
  S inner_;
  std::size_t left_;  // items still to give; 0 once the inner stream ended
};

/// The items of `S` up to the first one for which `pred` is false (see stream::take_while).
template <class S, class P>
class TakeWhile {
 public:
  /// Takes `inner`'s items while `pred` holds.
  TakeWhile(S&& inner, P pred) : inner_(std::forward<S>(inner)), pred_(std::move(pred)) {}

  /// The next item while the predicate holds; the end at the first that fails it (that item
  /// is dropped) or at the inner stream's end.
  Poll<std::optional<stream_item_t<S>>> poll_next(Context& cx) {
    using Out = std::optional<stream_item_t<S>>;
    if (ended_) return Poll<Out>(std::nullopt);
    auto p = inner_.poll_next(cx);
    if (p.is_pending()) return pending;
    if (!p.value() || !std::invoke(pred_, std::as_const(*p.value()))) {
      ended_ = true;
      return Poll<Out>(std::nullopt);
    }
    return p;
  }

 private:
  S inner_;
  P pred_;
  bool ended_ = false;
};

/// `s`'s items passed through `f` (tokio-stream's StreamExt::map).
template <class S, class F>
requires Stream<std::remove_reference_t<S>> Map<S, std::decay_t<F>> map(S&& s, F&& f) {
  return Map<S, std::decay_t<F>>(std::forward<S>(s), std::forward<F>(f));
}

/// `s`'s items for which `pred(const item&)` is true. A stream whose items all fail it keeps
/// the poll running as long as items are ready.
template <class S, class P>
requires Stream<std::remove_reference_t<S>> Filter<S, std::decay_t<P>> filter(S&& s, P&& pred) {
  return Filter<S, std::decay_t<P>>(std::forward<S>(s), std::forward<P>(pred));
}

/// The first `n` items of `s` (none for n = 0), then the end.
template <class S>
requires Stream<std::remove_reference_t<S>> Take<S> take(S&& s, std::size_t n) {
  return Take<S>(std::forward<S>(s), n);
}

/// `s`'s items until the first for which `pred(const item&)` is false, then the end.
template <class S, class P>
requires Stream<std::remove_reference_t<S>> TakeWhile<S, std::decay_t<P>> take_while(S&& s,
                                                                                     P&& pred) {
  return TakeWhile<S, std::decay_t<P>>(std::forward<S>(s), std::forward<P>(pred));
}

}  // namespace spool::stream
