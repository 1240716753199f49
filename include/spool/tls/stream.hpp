// spool::tls::TlsStream<S>: a TLS connection over any spool byte stream, with TcpStream's
// read / write / shutdown / split API.
#pragma once

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "spool/tls/connection.hpp"
#include "spool/tls/ops.hpp"

namespace spool::tls {

template <ByteStream S>
class Handshake;
template <ByteStream S>
class TlsStream;

namespace detail {
/// `*c` unless `c` is empty (a moved-from stream or half): then throws std::logic_error
/// naming `who`.
template <class Ptr>
auto& live_connection(const Ptr& c, const char* who) {
  if (!c) {
    throw std::logic_error(std::string("spool::tls::") + who +
                           ": used after it was moved from (into_split() moves a stream into "
                           "its halves; use those)");
  }
  return *c;
}
}  // namespace detail

/// A half of a TLS stream: `Ptr` is a raw pointer (borrowed: split) or a shared_ptr (owned:
/// into_split) to the connection. Move-only; a moved-from half throws std::logic_error.
template <ByteStream S, class Ptr>
class TlsReadHalf : public TlsReadOps<TlsReadHalf<S, Ptr>, S> {
 public:
  /// Takes over o's connection; o is left moved-from (its operations throw).
  TlsReadHalf(TlsReadHalf&& o) noexcept : c_(std::exchange(o.c_, Ptr{})) {}
  /// Takes over o's connection, dropping this one's.
  TlsReadHalf& operator=(TlsReadHalf&& o) noexcept {
    c_ = std::exchange(o.c_, Ptr{});
    return *this;
  }
  /// The connection's state (for the operations).
  detail::Connection<S>& connection() { return detail::live_connection(c_, "TlsReadHalf"); }

 private:
  template <ByteStream>
  friend class TlsStream;
  explicit TlsReadHalf(Ptr c) noexcept : c_(std::move(c)) {}
  Ptr c_;
};

/// The write side of a TLS stream (see TlsReadHalf). Dropping an owned one sends nothing:
/// call shutdown() on it first to send close_notify.
template <ByteStream S, class Ptr>
class TlsWriteHalf : public TlsWriteOps<TlsWriteHalf<S, Ptr>, S> {
 public:
  /// Takes over o's connection; o is left moved-from (its operations throw).
  TlsWriteHalf(TlsWriteHalf&& o) noexcept : c_(std::exchange(o.c_, Ptr{})) {}
  /// Takes over o's connection, dropping this one's.
  TlsWriteHalf& operator=(TlsWriteHalf&& o) noexcept {
    c_ = std::exchange(o.c_, Ptr{});
    return *this;
  }
  /// The connection's state (for the operations).
  detail::Connection<S>& connection() { return detail::live_connection(c_, "TlsWriteHalf"); }

 private:
  template <ByteStream>
  friend class TlsStream;
  explicit TlsWriteHalf(Ptr c) noexcept : c_(std::move(c)) {}
  Ptr c_;
};

/// A TLS connection over the byte stream `S` (TcpStream, UnixStream, io::Duplex of two pipe
/// ends), made by TlsConnector::connect or TlsAcceptor::accept once the handshake is done.
/// read / read_exact / write / write_all / shutdown are futures, as on a TcpStream; OpenSSL
/// works on memory buffers and the ciphertext moves through S's own futures, so nothing
/// blocks a thread, on either I/O backend and under any executor. One task may read while
/// another writes (split / into_split; the halves lock the connection briefly in each poll):
/// one reader and one writer at a time (a second read, or a second write or shutdown, while
/// one is pending throws std::logic_error). Renegotiation is refused. Move-only; a moved-from
/// stream throws std::logic_error. Destroying it closes S without close_notify: co_await
/// shutdown() first to end the stream cleanly.
template <ByteStream S>
class TlsStream : public TlsReadOps<TlsStream<S>, S>, public TlsWriteOps<TlsStream<S>, S> {
 public:
  /// The borrowed read half (split).
  using ReadHalf = TlsReadHalf<S, detail::Connection<S>*>;
  /// The borrowed write half (split).
  using WriteHalf = TlsWriteHalf<S, detail::Connection<S>*>;
  /// The owned read half (into_split).
  using OwnedReadHalf = TlsReadHalf<S, std::shared_ptr<detail::Connection<S>>>;
  /// The owned write half (into_split).
  using OwnedWriteHalf = TlsWriteHalf<S, std::shared_ptr<detail::Connection<S>>>;

  /// Takes over the other's connection; the moved-from stream is not to be used.
  TlsStream(TlsStream&&) noexcept = default;
  /// Takes over the other's connection, dropping this one's.
  TlsStream& operator=(TlsStream&&) noexcept = default;

  /// Borrowed halves, for two tasks that both live no longer than the stream.
  std::pair<ReadHalf, WriteHalf> split() {
    detail::Connection<S>* c = &connection();
    return {ReadHalf(c), WriteHalf(c)};
  }
  /// Owned halves, for two independent tasks: the connection closes when both are gone.
  std::pair<OwnedReadHalf, OwnedWriteHalf> into_split() && {
    (void)connection();
    return {OwnedReadHalf(c_), OwnedWriteHalf(std::move(c_))};
  }

  /// The transport (do not read or write it: that would corrupt the TLS records).
  S& get_ref() { return connection().transport; }
  /// The ALPN protocol agreed on ("" for none).
  std::string_view alpn_protocol() const {
    return locked([](const detail::Engine& e) { return e.alpn_protocol(); });
  }
  /// The protocol version agreed on ("TLSv1.3", "TLSv1.2").
  std::string_view version() const {
    return locked([](const detail::Engine& e) { return e.version(); });
  }
  /// On a server: the SNI name the client sent ("" for none).
  std::string_view server_name() const {
    return locked([](const detail::Engine& e) { return e.server_name(); });
  }
  /// OpenSSL's SSL object (read its state while no half runs; driving it yourself breaks
  /// the stream).
  ssl_st* native_handle() const {
    return detail::live_connection(c_, "TlsStream").engine.native_handle();
  }
  /// The connection's state (for the operations).
  detail::Connection<S>& connection() { return detail::live_connection(c_, "TlsStream"); }

 private:
  friend class Handshake<S>;
  explicit TlsStream(std::shared_ptr<detail::Connection<S>> c) noexcept : c_(std::move(c)) {}
  // `get` of the engine, under the connection's lock (a half may be running elsewhere).
  template <class Get>
  std::string_view locked(Get get) const {
    detail::Connection<S>& c = detail::live_connection(c_, "TlsStream");
    std::lock_guard guard(c.mu);
    return get(c.engine);
  }
  std::shared_ptr<detail::Connection<S>> c_;
};

}  // namespace spool::tls
