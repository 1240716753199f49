// spool::net::UnixDatagram: datagrams between Unix-domain sockets on filesystem paths.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <ranges>
#include <string>
#include <string_view>
#include <utility>

#include "spool/detail/io_source.hpp"
#include "spool/net/datagram_ops.hpp"
#include "spool/net/stream_ops.hpp"

namespace spool::net {

/// A Unix-domain datagram socket (SOCK_DGRAM; unlike UDP, the kernel never drops a datagram
/// between two local sockets: a send waits while the receiver's queue is full). send_to /
/// recv_from work on an unconnected socket; after connect(), send / recv talk to that peer
/// only. A socket must be bound to a path (bind) for others to send to it, or to be told the
/// sender of what it receives; recv_from gives "" for an unbound sender. Any number of
/// tasks may send and receive on one socket at once. Errors are std::system_error naming
/// the operation and the path. Like UnixListener, it does not remove its path when it closes.
class SPOOL_API UnixDatagram {
 public:
  /// A socket bound to `path`. Throws std::system_error naming the path (EADDRINUSE while a
  /// file is there, EACCES, ENOENT...), std::invalid_argument for a path too long.
  static UnixDatagram bind(std::string_view path);
  /// A socket bound to no path: it can send to bound sockets (which see "" as its path, and
  /// cannot answer it).
  static UnixDatagram unbound();
  /// A connected pair (socketpair), both registered with the current runtime's driver.
  static std::pair<UnixDatagram, UnixDatagram> pair();
  /// Takes a Unix datagram socket made elsewhere: it is made non-blocking and close-on-exec
  /// (which other holders of the same open socket see too). Throws std::invalid_argument,
  /// saying what `fd` is, when it is not a SOCK_DGRAM socket of family AF_UNIX; `fd` is
  /// closed then (unless it was not open).
  static UnixDatagram from_fd(int fd);

  /// Sets the peer of send / recv: the socket bound at `path` (no datagram is sent). Throws
  /// std::system_error naming the path (ENOENT, ECONNREFUSED when nothing is bound there).
  void connect(std::string_view path);
  /// Sends `buf` as one datagram to the socket bound at `path`. Throws
  /// std::invalid_argument for a path too long.
  template <ByteBuffer B>
  SendDatagramFuture send_to(const B& buf, std::string_view path) {
    sockaddr_storage to{};  // copied by the future
    const socklen_t len = address_of(path, to);
    return {source_,
            bytes(buf),
            std::ranges::size(buf),
            reinterpret_cast<const sockaddr*>(&to),
            len,
            "spool::net::UnixDatagram::send_to"};
  }
  /// Receives one datagram: `auto [n, from_path] = co_await socket.recv_from(buf);` (bytes
  /// beyond the buffer's size are dropped; `from_path` is "" for an unbound sender).
  template <MutableByteBuffer B>
  RecvFromFuture<std::string> recv_from(B&& buf) {
    return {source_, reinterpret_cast<std::byte*>(std::ranges::data(buf)), std::ranges::size(buf),
            &sender, "spool::net::UnixDatagram::recv_from"};
  }
  /// Sends `buf` as one datagram to the connected peer.
  template <ByteBuffer B>
  SendDatagramFuture send(const B& buf) {
    return {source_, bytes(buf), std::ranges::size(buf),
            nullptr, 0,          "spool::net::UnixDatagram::send"};
  }
  /// Receives one datagram from the connected peer: its size.
  template <MutableByteBuffer B>
  ReadFuture recv(B&& buf) {
    return {source_, reinterpret_cast<std::byte*>(std::ranges::data(buf)), std::ranges::size(buf),
            ReadFuture::Mode::kDatagram, "spool::net::UnixDatagram::recv"};
  }

  /// The bound path ("" when unbound).
  std::string local_path() const;
  /// The connected peer's path ("" when it is unbound); throws std::system_error ENOTCONN
  /// when not connected.
  std::string peer_path() const;
  /// Shuts down receiving, sending or both (SHUT_RD, SHUT_WR, SHUT_RDWR): a pending recv
  /// then returns 0, a later send fails with EPIPE.
  void shutdown(int how);

 private:
  explicit UnixDatagram(detail::IoSource source) noexcept : source_(std::move(source)) {}
  template <class B>
  static const std::byte* bytes(const B& buf) {
    return reinterpret_cast<const std::byte*>(std::ranges::data(buf));
  }
  // Fills `to` with `path`'s address: its length.
  static socklen_t address_of(std::string_view path, sockaddr_storage& to);
  static std::string sender(const sockaddr_storage& from, socklen_t len);
  detail::IoSource source_;
};

}  // namespace spool::net
