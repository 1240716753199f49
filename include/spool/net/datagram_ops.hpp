// The send and receive futures of spool's datagram sockets (UdpSocket, UnixDatagram).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/io_source.hpp"

namespace spool::detail {
/// One recvfrom into [data, data + len) when `source` is readable: the datagram's size,
/// its sender in `from` / `from_len`. Throws std::system_error naming `what`.
SPOOL_API Poll<std::size_t> poll_recv_from(Context& cx, IoSource& source, IoWaiter& waiter,
                                           std::byte* data, std::size_t len, sockaddr_storage& from,
                                           socklen_t& from_len, const char* what);
}  // namespace spool::detail

namespace spool::net {

/// The future of a datagram socket's send_to and send: ready with the bytes sent (the whole
/// datagram). The buffer must outlive it.
class SPOOL_API SendDatagramFuture {
 public:
  /// Sends [data, data + len) to `to` (`to_len` bytes; nullptr: the connected peer).
  SendDatagramFuture(detail::IoSource& source, const std::byte* data, std::size_t len,
                     const sockaddr* to, socklen_t to_len, const char* what) noexcept;
  /// Ready with the count once sent. Throws std::system_error naming the operation and the
  /// destination (or the socket's addresses, when connected).
  Poll<std::size_t> poll(Context& cx);

 private:
  detail::IoSource* source_;
  const std::byte* data_;
  std::size_t len_;
  sockaddr_storage to_{};
  socklen_t to_len_;  // 0: the connected peer
  const char* what_;
  detail::IoWaiter waiter_;
};

/// The future of a datagram socket's recv_from: ready with the size of the datagram received
/// (bytes beyond the buffer's size are dropped, as recvfrom does) and its sender, an `Addr`
/// (a SocketAddr, a Unix path). The buffer must outlive it.
template <class Addr>
class RecvFromFuture {
 public:
  /// Makes the sender's `Addr` of its raw address.
  using Convert = Addr (*)(const sockaddr_storage&, socklen_t);
  /// Receives one datagram into [data, data + len).
  RecvFromFuture(detail::IoSource& source, std::byte* data, std::size_t len, Convert convert,
                 const char* what) noexcept
      : source_(&source), data_(data), len_(len), convert_(convert), what_(what) {}
  /// Ready with (size, sender) once a datagram came.
  Poll<std::pair<std::size_t, Addr>> poll(Context& cx) {
    sockaddr_storage from{};
    socklen_t from_len = 0;
    const Poll<std::size_t> r =
        detail::poll_recv_from(cx, *source_, waiter_, data_, len_, from, from_len, what_);
    if (r.is_pending()) return pending;
    return Poll<std::pair<std::size_t, Addr>>::ready(r.value(), convert_(from, from_len));
  }

 private:
  detail::IoSource* source_;
  std::byte* data_;
  std::size_t len_;
  Convert convert_;
  const char* what_;
  detail::IoWaiter waiter_;
};

}  // namespace spool::net
