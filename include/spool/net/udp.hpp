// spool::net::UdpSocket: datagrams over the runtime's I/O driver.
#pragma once

#include <cstddef>
#include <ranges>
#include <string_view>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/io_source.hpp"
#include "spool/net/datagram_ops.hpp"
#include "spool/net/socket_addr.hpp"
#include "spool/net/stream_ops.hpp"

namespace spool::net {

/// The future of UdpSocket::recv_from: (size, sender).
using RecvDatagramFuture = RecvFromFuture<SocketAddr>;

/// A UDP socket. send_to / recv_from work unconnected; after connect(), send / recv talk to
/// that peer only (the kernel filters other senders). Any number of tasks may send and
/// receive on one socket at once (each waiting one is woken when the socket becomes
/// ready, and those that find nothing wait again). Errors are
/// std::system_error naming the operation and the addresses (a connected socket whose peer has no
/// listener reports ECONNREFUSED on a later call).
class SPOOL_API UdpSocket {
 public:
  /// Binds `addr` (port 0 picks a free port). The socket belongs to the current runtime's
  /// driver. Throws std::system_error naming the address.
  static UdpSocket bind(const SocketAddr& addr);
  /// bind(SocketAddr::parse(addr)).
  static UdpSocket bind(std::string_view addr) { return bind(SocketAddr::parse(addr)); }
  /// Takes a UDP socket made elsewhere: it is made non-blocking and close-on-exec (which
  /// other holders of the same open socket see too) and registered with the current
  /// runtime's driver. Throws std::invalid_argument, saying what `fd` is, when it is not a
  /// UDP socket of family AF_INET or AF_INET6; `fd` is closed then (unless it was not open).
  static UdpSocket from_fd(int fd);

  /// Sets the default peer of send / recv (no packet is sent). Throws std::system_error.
  void connect(const SocketAddr& addr);
  /// Sends `buf` as one datagram to `to`.
  template <ByteBuffer B>
  SendDatagramFuture send_to(const B& buf, const SocketAddr& to) {
    return {source_,   bytes(buf), std::ranges::size(buf),
            to.data(), to.size(),  "spool::net::UdpSocket::send_to"};
  }
  /// Receives one datagram: `auto [n, from] = co_await socket.recv_from(buf);`.
  template <MutableByteBuffer B>
  RecvDatagramFuture recv_from(B&& buf) {
    return {source_, reinterpret_cast<std::byte*>(std::ranges::data(buf)), std::ranges::size(buf),
            &sender, "spool::net::UdpSocket::recv_from"};
  }
  /// Sends `buf` as one datagram to the connected peer.
  template <ByteBuffer B>
  SendDatagramFuture send(const B& buf) {
    return {source_, bytes(buf), std::ranges::size(buf), nullptr, 0, "spool::net::UdpSocket::send"};
  }
  /// Receives one datagram from the connected peer: its size.
  template <MutableByteBuffer B>
  ReadFuture recv(B&& buf) {
    return {source_, reinterpret_cast<std::byte*>(std::ranges::data(buf)), std::ranges::size(buf),
            ReadFuture::Mode::kDatagram, "spool::net::UdpSocket::recv"};
  }

  /// The bound address.
  SocketAddr local_addr() const;
  /// The connected peer (throws std::system_error ENOTCONN when not connected).
  SocketAddr peer_addr() const;
  /// Sets the time to live of outgoing datagrams (IP_TTL; on an IPv6 socket the hop limit,
  /// IPV6_UNICAST_HOPS, and IP_TTL too, for IPv4 peers reached through IPv4-mapped
  /// addresses). Throws std::invalid_argument outside 1 to 255.
  void set_ttl(int ttl);
  /// The time to live of outgoing datagrams (see set_ttl).
  int ttl() const;
  /// Sets SO_BROADCAST: whether datagrams may be sent to a broadcast address.
  void set_broadcast(bool on);
  /// Whether SO_BROADCAST is set.
  bool broadcast() const;

 private:
  explicit UdpSocket(detail::IoSource source) noexcept : source_(std::move(source)) {}
  static SocketAddr sender(const sockaddr_storage& from, socklen_t len) {
    return SocketAddr(reinterpret_cast<const sockaddr*>(&from), len);
  }
  template <class B>
  static const std::byte* bytes(const B& buf) {
    return reinterpret_cast<const std::byte*>(std::ranges::data(buf));
  }
  detail::IoSource source_;
};

}  // namespace spool::net
