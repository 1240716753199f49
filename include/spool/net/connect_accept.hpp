// spool::net::ConnectFuture and spool::net::AcceptFuture: connect and accept for every stream
// socket type (TcpStream, UnixStream).
#pragma once

#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/socket_ops.hpp"

namespace spool::net {

/// The future of `Stream::connect`: ready with the connected stream. Throws
/// std::system_error naming the address (ECONNREFUSED, ENOENT for a Unix path, ...). The
/// socket is made at the first poll and belongs to the driver of the runtime the future
/// was made under.
template <class Stream>
class ConnectFuture {
 public:
  /// Ready with the stream once connected.
  Poll<Stream> poll(Context& cx) {
    Poll<detail::IoSource> r = connecting_.poll(cx);
    if (r.is_pending()) return pending;
    return Poll<Stream>::ready(Stream(std::move(r.value())));
  }

 private:
  friend Stream;
  explicit ConnectFuture(detail::Connecting c) noexcept : connecting_(std::move(c)) {}
  detail::Connecting connecting_;
};

/// The future of a listener's accept: ready with the next connection and its peer's
/// address (`Stream::Peer`). When the process or system is out of file descriptors
/// (EMFILE, ENFILE) or memory, it backs off on a timer (1 ms, doubling up to 1 s; counted
/// in RuntimeMetrics::io_accept_backoffs) and tries again, instead of spinning or failing:
/// the connection waits in the backlog. Other errors are std::system_error. Must not be
/// moved once polled (its back-off timer is registered in place).
template <class Stream>
class AcceptFuture {
 public:
  /// The peer's address type of `Stream`.
  using Peer = typename Stream::Peer;
  /// Accepts on `listener` (see TcpListener::accept).
  AcceptFuture(detail::IoSource& listener, const char* what) noexcept
      : accepting_(listener, what) {}
  /// Ready with the connection once one is accepted.
  Poll<std::pair<Stream, Peer>> poll(Context& cx) {
    Poll<detail::Accepted> r = accepting_.poll(cx);
    if (r.is_pending()) return pending;
    detail::Accepted& a = r.value();
    Peer peer = Stream::peer_of(a);
    return Poll<std::pair<Stream, Peer>>::ready(Stream(std::move(a.socket)), std::move(peer));
  }

 private:
  detail::Accepting accepting_;
};

}  // namespace spool::net
