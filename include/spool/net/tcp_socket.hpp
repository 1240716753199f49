// spool::net::TcpSocket: a TCP socket set up before it connects or listens (tokio's
// TcpSocket).
#pragma once

#include <cstdint>

#include "spool/net/connect_accept.hpp"
#include "spool/net/socket_addr.hpp"
#include "spool/net/tcp.hpp"

namespace spool::net {

/// A TCP socket that is neither connected nor listening yet, for what must be set before:
/// SO_REUSEADDR / SO_REUSEPORT (several listeners on one port), buffer sizes, a local
/// address for an outgoing connection. `std::move(socket).connect(addr)` then gives a
/// TcpStream, `std::move(socket).listen(backlog)` a TcpListener, both registered with the
/// current runtime's driver. Errors are std::system_error naming the operation; a
/// moved-from (connected or listening) TcpSocket throws std::logic_error. Move-only; the
/// destructor closes a socket that was neither connected nor listening. Not (yet) there of
/// tokio's: keepalive, linger, TOS, bind_device, take_error.
class SPOOL_API TcpSocket {
 public:
  /// A new IPv4 socket (non-blocking, close-on-exec).
  static TcpSocket new_v4();
  /// A new IPv6 socket (non-blocking, close-on-exec).
  static TcpSocket new_v6();
  /// A new socket of `addr`'s family.
  static TcpSocket for_address(const SocketAddr& addr) {
    return addr.is_ipv6() ? new_v6() : new_v4();
  }

  /// Takes `other`'s socket (`other` is moved-from).
  TcpSocket(TcpSocket&& other) noexcept;
  /// Closes this socket, then takes `other`'s.
  TcpSocket& operator=(TcpSocket&& other) noexcept;
  TcpSocket(const TcpSocket&) = delete;
  TcpSocket& operator=(const TcpSocket&) = delete;
  /// Closes the socket, unless it connected or listens.
  ~TcpSocket();

  /// Sets SO_REUSEADDR: bind to a port still in TIME_WAIT.
  void set_reuseaddr(bool on);
  /// Whether SO_REUSEADDR is set.
  bool reuseaddr() const;
  /// Sets SO_REUSEPORT: several sockets with it may listen on one address and port (the
  /// kernel spreads the connections over them).
  void set_reuseport(bool on);
  /// Whether SO_REUSEPORT is set.
  bool reuseport() const;
  /// Sets SO_SNDBUF (the kernel doubles it for its bookkeeping, and bounds it).
  void set_send_buffer_size(std::uint32_t bytes);
  /// SO_SNDBUF, as the kernel reports it.
  std::uint32_t send_buffer_size() const;
  /// Sets SO_RCVBUF (the kernel doubles it for its bookkeeping, and bounds it).
  void set_recv_buffer_size(std::uint32_t bytes);
  /// SO_RCVBUF, as the kernel reports it.
  std::uint32_t recv_buffer_size() const;
  /// Sets TCP_NODELAY, kept by the stream it connects.
  void set_nodelay(bool on);

  /// Binds the socket to `addr` (port 0: one the system picks): the local address of a
  /// listener, or of an outgoing connection. An address of the other family (IPv6 for a
  /// new_v4 socket...) throws std::invalid_argument, as connect's does.
  void bind(const SocketAddr& addr);
  /// The bound address.
  SocketAddr local_addr() const;

  /// Connects to `addr`: `auto s = co_await std::move(socket).connect(addr);`. Errors as
  /// TcpStream::connect's.
  ConnectFuture<TcpStream> connect(const SocketAddr& addr) &&;
  /// Listens with a backlog of `backlog` (bind first, or the system picks a port).
  TcpListener listen(std::uint32_t backlog) &&;

 private:
  explicit TcpSocket(int fd) noexcept : fd_(fd) {}
  // The socket; throws std::logic_error, naming `what`, when there is none (moved from).
  int fd(const char* what) const;
  // Throws std::invalid_argument when `addr`'s family is not the socket's.
  void check_family(const SocketAddr& addr, const char* what) const;
  void set_int(int level, int name, int value, const char* what);
  int get_int(int level, int name, const char* what) const;
  void set_buffer_size(int name, std::uint32_t bytes, const char* what);
  std::uint32_t buffer_size(int name, const char* what) const;

  int fd_ = -1;
};

}  // namespace spool::net
