// ClientStream: the byte stream of one client connection: plain TCP, or TLS over it (the
// server's --tls-cert / --tls-key, when mini-redis is built with spool::tls).
#pragma once

#include <span>
#include <string_view>
#include <utility>
#include <variant>

#include "spool/core/future.hpp"
#include "spool/net.hpp"
#ifdef MINI_REDIS_HAVE_TLS
#include "spool/tls.hpp"
#endif

namespace mini_redis {

/// One of several futures of the same output: polls the one it holds (built in place, it
/// never moves once polled).
template <class... Fs>
class OneOfFutures {
 public:
  /// Holds the future `f`, of type number `I` of Fs.
  template <std::size_t I, class F>
  OneOfFutures(std::in_place_index_t<I> i, F&& f) : f_(i, std::forward<F>(f)) {}
  /// Polls the future held.
  auto poll(spool::Context& cx) {
    return std::visit([&cx](auto& f) { return f.poll(cx); }, f_);
  }

 private:
  std::variant<Fs...> f_;
};

/// A client's connection: reads and writes over TCP or TLS alike.
class ClientStream {
 public:
#ifdef MINI_REDIS_HAVE_TLS
  /// A TLS connection (its handshake done).
  using Tls = spool::tls::TlsStream<spool::net::TcpStream>;
  using Read =
      OneOfFutures<spool::net::ReadFuture, spool::tls::TlsReadFuture<spool::net::TcpStream>>;
  using Write =
      OneOfFutures<spool::net::WriteFuture, spool::tls::TlsWriteFuture<spool::net::TcpStream>>;
  /// Serves over TLS.
  explicit ClientStream(Tls s) : s_(std::move(s)) {}
#else
  using Read = OneOfFutures<spool::net::ReadFuture>;
  using Write = OneOfFutures<spool::net::WriteFuture>;
#endif
  /// Serves over plain TCP.
  explicit ClientStream(spool::net::TcpStream s) : s_(std::move(s)) {}

  /// Reads what is available into `buf`: the count, 0 at the end of the stream.
  Read read(std::span<char> buf) {
#ifdef MINI_REDIS_HAVE_TLS
    if (auto* tls = std::get_if<1>(&s_)) return Read(std::in_place_index<1>, tls->read(buf));
#endif
    return Read(std::in_place_index<0>, std::get<0>(s_).read(buf));
  }
  /// Writes all of `bytes`.
  Write write_all(std::string_view bytes) {
#ifdef MINI_REDIS_HAVE_TLS
    if (auto* tls = std::get_if<1>(&s_)) {
      return Write(std::in_place_index<1>, tls->write_all(bytes));
    }
#endif
    return Write(std::in_place_index<0>, std::get<0>(s_).write_all(bytes));
  }
  /// Over TLS: the stream's close_notify (a TCP connection just closes).
  spool::Task<void> shutdown() {
#ifdef MINI_REDIS_HAVE_TLS
    if (auto* tls = std::get_if<1>(&s_)) co_await tls->shutdown();
#endif
    co_return;
  }

 private:
#ifdef MINI_REDIS_HAVE_TLS
  std::variant<spool::net::TcpStream, Tls> s_;
#else
  std::variant<spool::net::TcpStream> s_;
#endif
};

}  // namespace mini_redis
