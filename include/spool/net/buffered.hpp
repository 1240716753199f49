// spool::net::BufReader and spool::net::BufWriter: buffered adapters over a byte stream, so
// that a line or RESP protocol reads a line at a time and writes a reply in one syscall.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/core/poll_fn.hpp"
#include "spool/core/task.hpp"
#include "spool/detail/poll_held.hpp"
#include "spool/io/pending_io.hpp"
#include "spool/net/io_error.hpp"
#include "spool/net/stream_ops.hpp"

namespace spool::net {

/// Reads from `R` (TcpStream, UnixStream, a read half...) through a buffer of `capacity`
/// bytes: one recv fills it, and lines and small reads come out of it. Owns `R`. One task
/// reads at a time; each call's buffer or string must outlive its Task.
template <class R>
class BufReader : public spool::detail::PendingIoMarkOf<R> {
 public:
  /// Wraps `inner` with an empty buffer of `capacity` bytes (at least 1).
  explicit BufReader(R inner, std::size_t capacity = 8192)
      : inner_(std::move(inner)), buf_(std::max<std::size_t>(capacity, 1)) {}

  /// Appends to `out` the bytes up to and including the next `delim`, or up to the end of the
  /// stream: the count appended (0 only at the end of the stream). `limit` bounds the count:
  /// past it, the call throws std::length_error; what it appended before stays in `out`, and
  /// the buffered bytes that would have gone past the limit stay buffered (buffered()). Pass one
  /// when the peer is not trusted (the default is none), so that a peer that never sends
  /// `delim` cannot grow `out` without end.
  Task<std::size_t> read_until(char delim, std::string& out,
                               std::size_t limit = static_cast<std::size_t>(-1)) {
    std::size_t appended = 0;
    for (;;) {
      if (begin_ == end_ && co_await refill() == 0) co_return appended;
      const char* first = buf_.data() + begin_;
      const char* last = buf_.data() + end_;
      const char* hit = std::find(first, last, delim);
      const std::size_t take = static_cast<std::size_t>(hit - first) + (hit != last ? 1 : 0);
      if (appended + take > limit) {
        throw std::length_error("spool::net::BufReader::read_until: more than " +
                                std::to_string(limit) + " bytes before the delimiter");
      }
      out.append(first, take);
      begin_ += take;
      appended += take;
      if (hit != last) co_return appended;
    }
  }
  /// read_until('\n', out, limit): the line with its "\n" (and "\r" before it, if any).
  Task<std::size_t> read_line(std::string& out, std::size_t limit = static_cast<std::size_t>(-1)) {
    return read_until('\n', out, limit);
  }
  /// Reads into `dst` (any buffer the stream's read takes) what is buffered or, with the
  /// buffer empty, what one read of the stream gives (straight into `dst` when it is at
  /// least as large as the buffer): the count, 0 at the end of the stream or for an empty
  /// `dst`. A BufReader can so stand in for its stream. `dst` must outlive the Task.
  template <MutableByteBuffer B>
  Task<std::size_t> read(B&& dst) {
    return read_into(
        std::span<char>(reinterpret_cast<char*>(std::ranges::data(dst)), std::ranges::size(dst)));
  }
  /// Fills `dst` entirely, from the buffer first; throws UnexpectedEof if the stream ends.
  Task<void> read_exact(std::span<char> dst) {
    std::size_t done = 0;
    while (done < dst.size()) {
      if (begin_ == end_ && co_await refill() == 0) {
        throw UnexpectedEof("spool::net::BufReader::read_exact: the stream ended after " +
                            std::to_string(done) + " of " + std::to_string(dst.size()) + " bytes");
      }
      const std::size_t n = std::min(dst.size() - done, end_ - begin_);
      std::memcpy(dst.data() + done, buf_.data() + begin_, n);
      begin_ += n;
      done += n;
    }
  }
  /// The bytes buffered now (no wait): parse from them, then consume() what was used.
  std::span<const char> buffered() const noexcept { return {buf_.data() + begin_, end_ - begin_}; }
  /// Drops the first `n` buffered bytes (n ≤ buffered().size()).
  void consume(std::size_t n) noexcept { begin_ += std::min(n, end_ - begin_); }
  /// Reads more into the buffer (moving what is left to its front, growing it when it is
  /// full): the count read, 0 at the end of the stream.
  Task<std::size_t> fill() { return refill(); }

  /// The wrapped stream (writing to it directly is fine; reading would skip the buffer).
  R& get() noexcept { return inner_; }

 private:
  Task<std::size_t> read_into(std::span<char> dst) {
    if (dst.empty()) co_return 0;
    if (begin_ == end_) {
      if (dst.size() >= buf_.size()) co_return co_await inner_.read(dst);
      if (co_await refill() == 0) co_return 0;
    }
    const std::size_t n = std::min(dst.size(), end_ - begin_);
    std::memcpy(dst.data(), buf_.data() + begin_, n);
    begin_ += n;
    co_return n;
  }
  Task<std::size_t> refill() {
    if (begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    const std::size_t n = co_await inner_.read(std::span(buf_.data() + end_, buf_.size() - end_));
    end_ += n;
    co_return n;
  }

  R inner_;
  std::vector<char> buf_;
  std::size_t begin_ = 0;  // the first unread byte
  std::size_t end_ = 0;    // one past the last read byte
};

/// Writes to `W` (TcpStream, a write half...) through a buffer: small writes collect in it,
/// and flush() sends them in one write_all. A write larger than the buffer's room flushes
/// first and then goes straight through. Owns `W`. Destroying it does not flush (that needs
/// a co_await): call flush() before.
template <class W>
class BufWriter {
 public:
  /// Wraps `inner` with a buffer of `capacity` bytes.
  explicit BufWriter(W inner, std::size_t capacity = 8192)
      : inner_(std::move(inner)), capacity_(std::max<std::size_t>(capacity, 1)) {
    buf_.reserve(capacity_);
  }
  /// Takes `other`'s stream and buffer; a write its cancelled flush left pending is let go
  /// (it borrowed `other`'s stream): move a BufWriter only with no flush cancelled half-way.
  BufWriter(BufWriter&& other) noexcept(std::is_nothrow_move_constructible_v<W>)
      : inner_((other.write_.reset(), std::move(other.inner_))),
        capacity_(other.capacity_),
        buf_(std::move(other.buf_)) {}
  /// Takes `other`'s stream and buffer, after letting go of both pending writes (see the
  /// move constructor).
  BufWriter& operator=(BufWriter&& other) noexcept(std::is_nothrow_move_assignable_v<W>) {
    write_.reset();
    other.write_.reset();
    inner_ = std::move(other.inner_);
    capacity_ = other.capacity_;
    buf_ = std::move(other.buf_);
    return *this;
  }
  /// Buffers `data` (sending the buffer first when it would overflow; sending `data`
  /// directly when it is larger than the buffer).
  Task<void> write_all(std::span<const char> data) {
    if (buf_.size() + data.size() > capacity_) co_await flush();
    if (data.size() >= capacity_) {
      co_await inner_.write_all(data);
    } else {
      buf_.insert(buf_.end(), data.begin(), data.end());
    }
  }
  /// Refused: a string literal ends with the NUL this would send (see CharArray); pass
  /// std::string_view("...").
  template <std::size_t N>
  Task<void> write_all(const char (&)[N]) = delete;
  /// Sends everything buffered. Cancel-safe: what was sent leaves the buffer write by write,
  /// and a write a cancelled flush left pending is kept for the next flush (on io_uring a
  /// socket's send on a worker may go out although its future is dropped: sending its bytes
  /// again would repeat them), so a flush cancelled (or failed) half-way resends nothing.
  Task<void> flush() {
    co_await spool::poll_fn([this](Context& cx) { return poll_flush(cx); });
  }
  /// Bytes buffered and not yet sent.
  std::size_t pending() const noexcept { return buf_.size(); }
  /// The wrapped stream (write through it only after a flush, to keep the order).
  W& get() noexcept { return inner_; }

 private:
  using WriteFuture = decltype(std::declval<W&>().write(std::declval<std::span<const char>>()));

  // flush()'s poll: the pending write first (it points into buf_, which write_all only
  // appends to within its reserved capacity, so it never moves while the write pends).
  Poll<bool> poll_flush(Context& cx) {
    while (!buf_.empty()) {
      if (!write_) write_.emplace(inner_.write(std::span<const char>(buf_.data(), buf_.size())));
      auto p = detail::poll_held(write_, cx);  // (a failed one: the next flush writes afresh)
      if (p.is_pending()) return spool::pending;
      const std::size_t n = std::move(p).value();
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    return true;
  }

  W inner_;
  std::size_t capacity_;
  std::vector<char> buf_;
  std::optional<WriteFuture> write_;  // a flush's write, kept when the flush is cancelled
};

}  // namespace spool::net
