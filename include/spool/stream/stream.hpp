// spool::Stream: the concept of an asynchronous sequence, and spool::next(stream).
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool {

namespace detail {
template <class P>
inline constexpr bool is_poll_of_optional_v = false;
template <class T>
inline constexpr bool is_poll_of_optional_v<Poll<std::optional<T>>> = true;

// Throws std::invalid_argument, naming the stream `adapter`, for a negative duration.
inline void check_stream_duration(std::chrono::nanoseconds d, const char* adapter) {
  if (d.count() < 0) {
    throw std::invalid_argument(std::string("spool::stream::") + adapter +
                                ": the duration must not be negative");
  }
}
}  // namespace detail

/// A stream: the Future of a sequence. `s.poll_next(cx)` returns `Poll<std::optional<T>>`:
/// ready with the next item, ready with nullopt at the end, or pending (having stored the
/// latest `cx.waker()` to be woken when polling again can make progress, as a Future).
/// Polling again after the end is a misuse whose outcome is the stream's own (a Generator
/// throws, a channel receiver and spool's adapters give nullopt again); spool's adapters
/// never poll their stream after its end.
/// Dropping a pending poll loses nothing: the next poll_next goes on. Like a Future, a
/// stream must not move once polled unless its type says it may (Generator and the channel
/// receivers may).
/// Satisfied by spool::Generator, mpsc::Receiver, Interval, stream::BroadcastStream,
/// stream::WatchStream, Signal, codec::FramedRead / Framed, fs::ReadDir, DelayQueue and the
/// adapters of spool/stream/.
template <class S>
concept Stream = requires(S& s, Context& cx) {
  {s.poll_next(cx)};
  requires detail::is_poll_of_optional_v<decltype(s.poll_next(cx))>;
};

/// The type of a stream's items (`S` may be a reference to a stream).
template <class S>
requires Stream<std::remove_reference_t<S>>
using stream_item_t = typename decltype(std::declval<std::remove_reference_t<S>&>().poll_next(
    std::declval<Context&>()))::value_type::value_type;

namespace detail {
// An adapter's inner stream, never polled again once it ended: a poll after the end gives
// nullopt again (an inner Generator would throw).
template <class S>
class Fused {
 public:
  explicit Fused(S&& inner) : inner_(std::forward<S>(inner)) {}
  Poll<std::optional<stream_item_t<S>>> poll_next(Context& cx) {
    if (ended_) return Poll<std::optional<stream_item_t<S>>>(std::nullopt);
    auto p = inner_.poll_next(cx);
    ended_ = p.is_ready() && !p.value();
    return p;
  }

 private:
  S inner_;  // owned (S an object type) or borrowed (S an lvalue reference)
  bool ended_ = false;
};
}  // namespace detail

/// The future of a stream's next item (see spool::next). It borrows the stream, which must
/// outlive it; dropping it while pending loses nothing.
template <Stream S>
class NextItem {
 public:
  /// The next item of `stream`, which it borrows (spool::next makes it).
  explicit NextItem(S& stream) noexcept : stream_(&stream) {}
  /// stream.poll_next(cx).
  Poll<std::optional<stream_item_t<S>>> poll(Context& cx) { return stream_->poll_next(cx); }

 private:
  S* stream_;
};

/// The next item of any stream: `while (auto v = co_await spool::next(s)) use(*v);`.
/// (For a Generator this is gen.next(), which nests without growing the stack.)
template <Stream S>
NextItem<S> next(S& stream) noexcept {
  return NextItem<S>(stream);
}

}  // namespace spool
