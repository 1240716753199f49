// spool::stream::merge and zip: adapters over two streams.
// (Stream ownership as in spool/stream/adapters.hpp: an rvalue is moved in, an lvalue borrowed.)
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/stream/stream.hpp"

namespace spool::stream {

/// The items of `A` and `B` as they come (see stream::merge).
template <class A, class B>
class Merge {
 public:
  /// The item type both streams share.
  using Item = stream_item_t<A>;
  static_assert(std::is_same_v<Item, stream_item_t<B>>,
                "spool::stream::merge: both streams must have the same item type (map one)");

  /// Merges `a` and `b`.
  Merge(A&& a, B&& b) : a_(std::forward<A>(a)), b_(std::forward<B>(b)) {}

  /// The next item of either stream; the end once both ended. The stream polled first
  /// alternates, so one that is always ready cannot starve the other.
  Poll<std::optional<Item>> poll_next(Context& cx) {
    b_first_ = !b_first_;
    std::optional<Item> item = b_first_ ? poll_side(b_, b_ended_, cx) : poll_side(a_, a_ended_, cx);
    if (!item) item = b_first_ ? poll_side(a_, a_ended_, cx) : poll_side(b_, b_ended_, cx);
    if (!item && !(a_ended_ && b_ended_)) return pending;
    return Poll<std::optional<Item>>(std::move(item));
  }

 private:
  // One stream's next item, if it has one now; sets `ended` at its end.
  template <class S>
  static std::optional<Item> poll_side(S& s, bool& ended, Context& cx) {
    if (ended) return std::nullopt;
    auto p = s.poll_next(cx);
    if (p.is_pending()) return std::nullopt;
    ended = !p.value();
    return std::move(p).value();
  }

  A a_;
  B b_;
  bool a_ended_ = false;
  bool b_ended_ = false;
  bool b_first_ = true;  // flipped before each poll: `a` goes first in the first one
};

/// Pairs of the items of `A` and `B`, one of each (see stream::zip).
template <class A, class B>
class Zip {
 public:
  /// A pair of one item of each stream.
  using Item = std::pair<stream_item_t<A>, stream_item_t<B>>;

  /// Zips `a` and `b`.
  Zip(A&& a, B&& b) : a_(std::forward<A>(a)), b_(std::forward<B>(b)) {}

  /// The next pair; the end as soon as either stream ended (an item the other one gave
  /// meanwhile is dropped).
  Poll<std::optional<Item>> poll_next(Context& cx) {
    fill(a_, a_item_, cx);
    fill(b_, b_item_, cx);
    if (ended_) return Poll<std::optional<Item>>(std::nullopt);
    if (!a_item_ || !b_item_) return pending;
    Poll<std::optional<Item>> out(Item(std::move(*a_item_), std::move(*b_item_)));
    a_item_.reset();
    b_item_.reset();
    return out;
  }

 private:
  // Polls `s` for its next item unless `slot` holds one already or a stream ended.
  template <class S, class V>
  void fill(S& s, std::optional<V>& slot, Context& cx) {
    if (slot || ended_) return;
    auto p = s.poll_next(cx);
    if (p.is_pending()) return;
    if (!p.value()) {
      ended_ = true;
      return;
    }
    slot.emplace(std::move(*p.value()));
  }

  A a_;
  B b_;
  std::optional<stream_item_t<A>> a_item_;  // a's item, waiting for b's
  std::optional<stream_item_t<B>> b_item_;  // b's item, waiting for a's
  bool ended_ = false;
};

/// The items of `a` and `b` (of one item type) interleaved as they come; the end when both
/// ended.
template <class A, class B>
requires Stream<std::remove_reference_t<A>> && Stream<std::remove_reference_t<B>> Merge<A, B> merge(
    A&& a, B&& b) {
  return Merge<A, B>(std::forward<A>(a), std::forward<B>(b));
}

/// Pairs {item of a, item of b}; the end when either ended.
template <class A, class B>
requires Stream<std::remove_reference_t<A>> && Stream<std::remove_reference_t<B>> Zip<A, B> zip(
    A&& a, B&& b) {
  return Zip<A, B>(std::forward<A>(a), std::forward<B>(b));
}

}  // namespace spool::stream
