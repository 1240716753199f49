// spool::tls::TlsStream<S>: a TLS connection over any spool byte stream, with TcpStream's
// read / write / shutdown / split API.
#pragma once

#include <memory>
#include <string_view>
#include <utility>

#include "spool/tls/connection.hpp"
#include "spool/tls/ops.hpp"

namespace spool::tls {

template <ByteStream S>
class Handshake;
template <ByteStream S>
class TlsStream;

/// A half of a TLS stream: `Ptr` is a raw pointer (borrowed: split) or a shared_ptr (owned:
/// into_split) to the connection.
template <ByteStream S, class Ptr>
class TlsReadHalf : public TlsReadOps<TlsReadHalf<S, Ptr>, S> {
 public:
  /// The connection's state (for the operations).
  detail::Connection<S>& connection() noexcept { return *c_; }

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
  /// The connection's state (for the operations).
  detail::Connection<S>& connection() noexcept { return *c_; }

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
/// another writes (split / into_split; the halves lock the connection briefly in each poll).
/// Renegotiation is refused. Destroying it closes S without close_notify: co_await
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

  /// Borrowed halves, for two tasks that both live no longer than the stream.
  std::pair<ReadHalf, WriteHalf> split() noexcept {
    return {ReadHalf(c_.get()), WriteHalf(c_.get())};
  }
  /// Owned halves, for two independent tasks: the connection closes when both are gone.
  std::pair<OwnedReadHalf, OwnedWriteHalf> into_split() && {
    return {OwnedReadHalf(c_), OwnedWriteHalf(std::move(c_))};
  }

  /// The transport (do not read or write it: that would corrupt the TLS records).
  S& get_ref() noexcept { return c_->transport; }
  /// The ALPN protocol agreed on ("" for none).
  std::string_view alpn_protocol() const noexcept { return c_->engine.alpn_protocol(); }
  /// The protocol version agreed on ("TLSv1.3", "TLSv1.2").
  std::string_view version() const noexcept { return c_->engine.version(); }
  /// On a server: the SNI name the client sent ("" for none).
  std::string_view server_name() const noexcept { return c_->engine.server_name(); }
  /// OpenSSL's SSL object (read its state; driving it yourself breaks the stream).
  ssl_st* native_handle() const noexcept { return c_->engine.native_handle(); }
  /// The connection's state (for the operations).
  detail::Connection<S>& connection() noexcept { return *c_; }

 private:
  friend class Handshake<S>;
  explicit TlsStream(std::shared_ptr<detail::Connection<S>> c) noexcept : c_(std::move(c)) {}
  std::shared_ptr<detail::Connection<S>> c_;
};

}  // namespace spool::tls
