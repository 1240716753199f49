// The futures of a TLS stream's operations (read, read_exact, write, write_all, shutdown),
// and the mixins that give the stream and its halves those members.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <mutex>
#include <ranges>
#include <string>
#include <system_error>
#include <utility>

#include "spool/coop.hpp"
#include "spool/net/io_error.hpp"
#include "spool/net/stream_ops.hpp"
#include "spool/tls/connection.hpp"

namespace spool::tls {

namespace detail {

/// One TLS operation's hold on its side of a connection (Connection::claim): taken by each
/// poll, kept while the operation is pending, given back when it ends or is dropped.
template <ByteStream S>
class SideHold {
 public:
  /// A hold of `side` of `c` (its operation's, which does not move once polled).
  SideHold(Connection<S>& c, Side side) noexcept : c_(&c), side_(side) {}
  ~SideHold() {
    if (!held_) return;
    std::lock_guard guard(c_->mu);
    c_->release(side_, this);
  }
  SideHold(SideHold&& o) noexcept
      : c_(o.c_), side_(o.side_), held_(std::exchange(o.held_, false)) {}
  SideHold& operator=(SideHold&&) = delete;

  /// Polls `body` under the connection's lock, holding the side meanwhile and after it while
  /// it is pending. Throws std::logic_error when another operation holds the side.
  template <class F>
  auto poll(F&& body) {
    std::lock_guard guard(c_->mu);
    c_->claim(side_, this);
    held_ = true;
    try {
      auto p = body();
      if (p.is_ready()) release_locked();
      return p;
    } catch (...) {
      release_locked();
      throw;
    }
  }
  /// The connection.
  Connection<S>& connection() const noexcept { return *c_; }

 private:
  void release_locked() noexcept {
    c_->release(side_, this);
    held_ = false;
  }
  Connection<S>* c_;
  Side side_;
  bool held_ = false;
};

}  // namespace detail

/// The future of read / read_exact on a TLS stream: ready with the count of plaintext bytes
/// (read: what one record gives, 0 once the peer's close_notify came; read_exact: the whole
/// buffer, or net::UnexpectedEof). The end of the transport without close_notify throws
/// TlsError(TlsErrc::kUnexpectedEof), as rustls and OpenSSL 3 report it. Movable until first
/// polled; the buffer and the stream must outlive it.
template <ByteStream S>
class TlsReadFuture {
 public:
  /// Reads into [data, data + len) from `c`; `exact`: read_exact.
  TlsReadFuture(detail::Connection<S>& c, std::byte* data, std::size_t len, bool exact) noexcept
      : hold_(c, detail::Side::kReader), data_(data), len_(len), exact_(exact) {}
  /// Ready with the count (see the class comment). Throws std::logic_error while another
  /// read of the stream is pending.
  Poll<std::size_t> poll(Context& cx) {
    if (!spool::detail::coop_poll_proceed(cx)) return pending;
    return hold_.poll([&] { return poll_locked(cx); });
  }

 private:
  Poll<std::size_t> poll_locked(Context& cx) {
    detail::Connection<S>& c = hold_.connection();
    for (;;) {
      const std::optional<std::size_t> n = c.engine.read(data_ + done_, len_ - done_);
      // What reading made OpenSSL send (an alert, a key update's answer) goes out on the
      // way, without waiting; a transport error is left to the writer, since the plaintext
      // just read is out of OpenSSL and must reach the caller.
      if (c.engine.has_output()) c.flush_quietly(cx, detail::Side::kReader);
      if (!n) {
        if (!c.poll_fill(cx)) return pending;
        continue;
      }
      if (!exact_) return *n;
      done_ += *n;
      if (done_ == len_) return len_;
      if (*n == 0) {
        throw net::UnexpectedEof(
            "spool::tls::TlsStream::read_exact: the peer closed (close_notify) after " +
            std::to_string(done_) + " of the " + std::to_string(len_) + " bytes wanted");
      }
    }
  }

  detail::SideHold<S> hold_;
  std::byte* data_;
  std::size_t len_;
  std::size_t done_ = 0;
  bool exact_;
};

/// The future of write / write_all / flush on a TLS stream. write: ready with the count of
/// plaintext bytes encrypted (up to one record, 16 KiB) once their record is encrypted,
/// which the transport may not have taken yet (the next read, write, flush or shutdown sends
/// it), as tokio-rustls does: dropped before it is ready, it encrypted nothing, so a write
/// retried after a timeout never sends its bytes twice. write_all: ready with the whole
/// count once the transport took every record (dropped half-way, some records may have
/// gone). Either waits for the records of earlier writes first, so at most one record waits.
/// Movable until first polled; the buffer and the stream must outlive it.
template <ByteStream S>
class TlsWriteFuture {
 public:
  /// Writes [data, data + len) to `c`; `all`: write_all.
  TlsWriteFuture(detail::Connection<S>& c, const std::byte* data, std::size_t len,
                 bool all) noexcept
      : hold_(c, detail::Side::kWriter), data_(data), len_(len), all_(all) {}
  /// Ready with the count (see the class comment). Throws std::logic_error while another
  /// write or shutdown of the stream is pending.
  Poll<std::size_t> poll(Context& cx) {
    if (!spool::detail::coop_poll_proceed(cx)) return pending;
    return hold_.poll([&] { return poll_locked(cx); });
  }

 private:
  Poll<std::size_t> poll_locked(Context& cx) {
    detail::Connection<S>& c = hold_.connection();
    for (;;) {
      if (!c.poll_flush(cx, detail::Side::kWriter)) return pending;  // earlier records first
      if (all_ && done_ == len_) return done_;
      done_ += c.engine.write(data_ + done_, len_ - done_);
      if (!all_) {
        (void)c.poll_flush(cx, detail::Side::kWriter);  // on its way, not waited for
        return done_;
      }
    }
  }

  detail::SideHold<S> hold_;
  const std::byte* data_;
  std::size_t len_;
  std::size_t done_ = 0;
  bool all_;
};

/// The future of shutdown on a TLS stream: sends close_notify, then shuts down the
/// transport's writing side when it has shutdown(SHUT_WR) (TcpStream, UnixStream, Duplex),
/// as tokio-openssl does. It does not wait for the peer's close_notify: read until 0 for
/// that. Reads may go on after it; writes throw TlsErrc::kClosed.
template <ByteStream S>
class TlsShutdownFuture {
 public:
  /// Shuts `c` down.
  explicit TlsShutdownFuture(detail::Connection<S>& c) noexcept : hold_(c, detail::Side::kWriter) {}
  /// Ready once close_notify is sent. Throws std::logic_error while a write of the stream is
  /// pending.
  Poll<void> poll(Context& cx) {
    if (!spool::detail::coop_poll_proceed(cx)) return pending;
    return hold_.poll([&] { return poll_locked(cx); });
  }

 private:
  Poll<void> poll_locked(Context& cx) {
    detail::Connection<S>& c = hold_.connection();
    if (!queued_) {
      c.engine.close_notify();
      queued_ = true;
    }
    if (!c.poll_flush(cx, detail::Side::kWriter)) return pending;
    if constexpr (requires(S & s) { s.shutdown(SHUT_WR); }) {
      try {
        c.transport.shutdown(SHUT_WR);
      } catch (const std::system_error& e) {
        if (e.code().value() != ENOTCONN) throw;  // a peer already gone needs no FIN
      }
    }
    return Poll<void>::ready();
  }

  detail::SideHold<S> hold_;
  bool queued_ = false;
};

/// The read members of a TLS stream or read half `D` (`D::connection()` gives the state).
template <class D, class S>
class TlsReadOps {
 public:
  /// Reads what one record gives into `buf` (waiting until one comes): the count, 0 once the
  /// peer's close_notify came. The end of the transport without it throws
  /// TlsErrc::kUnexpectedEof.
  template <net::MutableByteBuffer B>
  TlsReadFuture<S> read(B&& buf) {
    return {conn(), bytes(buf), std::ranges::size(buf), false};
  }
  /// Fills `buf` entirely; throws net::UnexpectedEof after the peer's close_notify.
  template <net::MutableByteBuffer B>
  TlsReadFuture<S> read_exact(B&& buf) {
    return {conn(), bytes(buf), std::ranges::size(buf), true};
  }

 private:
  detail::Connection<S>& conn() { return static_cast<D*>(this)->connection(); }
  template <class B>
  static std::byte* bytes(B& buf) {
    return reinterpret_cast<std::byte*>(std::ranges::data(buf));
  }
};

/// The write members of a TLS stream or write half `D` (`D::connection()` gives the state).
template <class D, class S>
class TlsWriteOps {
 public:
  /// Encrypts up to one record (16 KiB) of `buf`: the count (see TlsWriteFuture).
  template <net::ByteBuffer B>
  TlsWriteFuture<S> write(const B& buf) {
    return {conn(), bytes(buf), std::ranges::size(buf), false};
  }
  /// Writes all of `buf`, until the transport took it.
  template <net::ByteBuffer B>
  TlsWriteFuture<S> write_all(const B& buf) {
    return {conn(), bytes(buf), std::ranges::size(buf), true};
  }
  /// Waits until the transport took every record written (a write may return before).
  TlsWriteFuture<S> flush() { return {conn(), nullptr, 0, true}; }
  /// Sends close_notify and shuts down the transport's writing side (TlsShutdownFuture).
  TlsShutdownFuture<S> shutdown() { return TlsShutdownFuture<S>(conn()); }

 private:
  detail::Connection<S>& conn() { return static_cast<D*>(this)->connection(); }
  template <class B>
  static const std::byte* bytes(const B& buf) {
    return reinterpret_cast<const std::byte*>(std::ranges::data(buf));
  }
};

}  // namespace spool::tls
