// spool::stream::chunks, chunks_timeout and collect: adapters that gather items into vectors.
// (Stream ownership as in spool/stream/adapters.hpp: an rvalue is moved in, an lvalue borrowed.)
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/stream/stream.hpp"
#include "spool/time/sleep.hpp"

namespace spool::stream {

/// `S`'s items in vectors of `size` (see stream::chunks and stream::chunks_timeout).
template <class S>
class Chunks {
 public:
  /// The type of the gathered items.
  using Item = stream_item_t<S>;

  /// Chunks of `size` items; with `max_wait`, a chunk also goes out once that long has passed
  /// since its first item came. Throws std::invalid_argument for a size of 0 or a negative wait.
  Chunks(S&& inner, std::size_t size, std::optional<std::chrono::nanoseconds> max_wait)
      : inner_(std::forward<S>(inner)), size_(size), max_wait_(max_wait) {
    if (size == 0) {
      throw std::invalid_argument("spool::stream::chunks: the chunk size must be at least 1");
    }
    if (max_wait) spool::detail::check_stream_duration(*max_wait, "chunks_timeout");
  }

  /// The next full chunk; a shorter one at the inner stream's end (or when max_wait passed).
  Poll<std::optional<std::vector<Item>>> poll_next(Context& cx) {
    using Out = std::optional<std::vector<Item>>;
    while (!ended_) {
      auto p = inner_.poll_next(cx);
      if (p.is_pending()) {
        if (!deadline_ || deadline_->poll(cx).is_pending()) return pending;
        break;  // the chunk waited max_wait: it goes out as it is
      }
      if (!p.value()) {
        ended_ = true;
        break;
      }
      if (buffer_.empty() && max_wait_) deadline_.emplace(sleep(*max_wait_));
      buffer_.push_back(std::move(*p.value()));
      if (buffer_.size() == size_) break;
    }
    if (buffer_.empty()) return Poll<Out>(std::nullopt);
    deadline_.reset();
    return Poll<Out>(std::exchange(buffer_, {}));
  }

 private:
  S inner_;
  std::size_t size_;
  std::optional<std::chrono::nanoseconds> max_wait_;
  std::optional<Sleep> deadline_;  // armed by a chunk's first item, when max_wait_ is set
  std::vector<Item> buffer_;       // the chunk being gathered
  bool ended_ = false;             // the inner stream ended
};

/// A future of all of `S`'s items, in order (see stream::collect).
template <class S>
class Collect {
 public:
  /// Collects `inner`'s items.
  explicit Collect(S&& inner) : inner_(std::forward<S>(inner)) {}

  /// Ready with every item once the stream ended.
  Poll<std::vector<stream_item_t<S>>> poll(Context& cx) {
    for (;;) {
      auto p = inner_.poll_next(cx);
      if (p.is_pending()) return pending;
      if (!p.value()) return Poll<std::vector<stream_item_t<S>>>(std::move(items_));
      items_.push_back(std::move(*p.value()));
    }
  }

 private:
  S inner_;
  std::vector<stream_item_t<S>> items_;
};

/// `s`'s items in vectors of `size`; the last may be shorter (futures-rs's chunks). Throws
/// std::invalid_argument for a size of 0.
template <class S>
requires Stream<std::remove_reference_t<S>> Chunks<S> chunks(S&& s, std::size_t size) {
  return Chunks<S>(std::forward<S>(s), size, std::nullopt);
}

/// As chunks, except that a chunk also goes out, shorter, once `max_wait` passed since its
/// first item (tokio-stream's chunks_timeout; the time is spool::sleep's). Throws
/// std::invalid_argument for a size of 0 or a negative wait.
template <class S>
requires Stream<std::remove_reference_t<S>> Chunks<S> chunks_timeout(
    S&& s, std::size_t size, std::chrono::nanoseconds max_wait) {
  return Chunks<S>(std::forward<S>(s), size, max_wait);
}

/// A future of every item of `s` in a std::vector, ready at its end (so never, for an
/// endless stream: take() first).
template <class S>
requires Stream<std::remove_reference_t<S>> Collect<S> collect(S&& s) {
  return Collect<S>(std::forward<S>(s));
}

}  // namespace spool::stream
