// spool::net::TcpListener and spool::net::TcpStream: TCP over the runtime's I/O driver.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task.hpp"
#include "spool/detail/io_source.hpp"
#include "spool/net/connect_accept.hpp"
#include "spool/net/halves.hpp"
#include "spool/net/io_error.hpp"
#include "spool/net/socket_addr.hpp"
#include "spool/net/stream_ops.hpp"
#include "spool/net/stream_socket.hpp"

namespace spool::net {

class TcpSocket;

/// A connected TCP socket. Reads and writes are futures (stream_ops.hpp); one task may read
/// while another writes (split / into_split give each its half). Errors are
/// std::system_error with the errno and a message naming the operation and the addresses.
/// Writes never raise SIGPIPE. Destroying the stream closes the socket (a pending
/// operation must not outlive it).
class SPOOL_API TcpStream : public StreamSocket<TcpStream> {
 public:
  /// The peer address type an accept gives.
  using Peer = SocketAddr;
  /// Connects to `addr`: `auto s = co_await TcpStream::connect(addr);`. The socket belongs
  /// to the current runtime's driver (the process-wide one outside every runtime).
  static ConnectFuture<TcpStream> connect(const SocketAddr& addr);
  /// Connects to each of `addrs` in turn: the stream of the first that accepts. Throws
  /// std::invalid_argument for an empty list and, when none accepts, a std::system_error
  /// with the last one's error, naming every address tried.
  static Task<TcpStream> connect(std::vector<SocketAddr> addrs);
  /// Resolves `host_and_port` ("localhost:6379", "example.org:80", "[::1]:6379") with
  /// lookup_host, off the workers, then connects to its addresses in turn, as tokio's
  /// TcpStream::connect does. Throws what lookup_host throws, or the std::system_error of
  /// the addresses' connects, naming `host_and_port` and them.
  static Task<TcpStream> connect(std::string_view host_and_port) {
    return connect_to_host(std::string(host_and_port));  // (the coroutine owns its copy)
  }

  /// Takes a connected TCP socket made elsewhere (inherited, or made by a C library), like
  /// tokio's TcpStream::from_std; unlike it, it makes the socket non-blocking and
  /// close-on-exec itself (which other holders of the same open socket see too), then
  /// registers it with the current runtime's driver. A connecting socket, or one reset since
  /// it connected (its read reports the reset, unless the previous holder saw it already),
  /// is taken too; a refused connect is not. Throws std::invalid_argument,
  /// saying what `fd` is, when it is not a TCP socket of family AF_INET or AF_INET6 that has
  /// connected or is connecting; `fd` is closed then (unless it was not open). A descriptor that
  /// a spool object of this runtime owns already is refused (std::system_error, EEXIST) and
  /// left open for its owner.
  static TcpStream from_fd(int fd);

  /// Shuts down reading, writing or both (SHUT_RD, SHUT_WR, SHUT_RDWR): after SHUT_WR the
  /// peer reads the end of the stream.
  void shutdown(int how = SHUT_WR);
  /// Sets TCP_NODELAY (no Nagle delay for small writes).
  void set_nodelay(bool on);
  /// Whether TCP_NODELAY is set.
  bool nodelay() const;
  /// Sets the time to live of outgoing packets (IP_TTL; on an IPv6 socket the hop limit,
  /// IPV6_UNICAST_HOPS, and IP_TTL too, for IPv4 peers reached through IPv4-mapped
  /// addresses). Throws std::invalid_argument outside 1 to 255.
  void set_ttl(int ttl);
  /// The time to live of outgoing packets (see set_ttl).
  int ttl() const;
  /// Sets SO_LINGER: a duration of 0 makes the close reset the connection (RST, unsent data
  /// dropped); std::nullopt (the default) closes at once and sends the data in the
  /// background. Any other duration throws std::invalid_argument: it would make the close
  /// block its thread, a runtime thread, for up to that long (tokio deprecated set_linger for
  /// that, in favour of a zero linger).
  void set_linger(std::optional<std::chrono::seconds> linger);
  /// The SO_LINGER setting (see set_linger).
  std::optional<std::chrono::seconds> linger() const;
  /// The remote address.
  SocketAddr peer_addr() const;
  /// The local address.
  SocketAddr local_addr() const;

  /// Names the operations in error messages.
  static constexpr const char* kReadWhat = "spool::net::TcpStream::read";
  /// Names the operations in error messages.
  static constexpr const char* kPeekWhat = "spool::net::TcpStream::peek";
  /// Names the operations in error messages.
  static constexpr const char* kWriteWhat = "spool::net::TcpStream::write";

 private:
  friend class ConnectFuture<TcpStream>;
  friend class AcceptFuture<TcpStream>;
  friend class TcpSocket;
  explicit TcpStream(detail::IoSource source) noexcept : StreamSocket(std::move(source)) {}
  static Task<TcpStream> connect_to_host(std::string host_and_port);
  // Connects the non-blocking socket `fd` (or a new one, for -1) to `addr`; `what` names the
  // operation in errors. The future owns `fd` once made (nothing before it throws).
  static ConnectFuture<TcpStream> connect_fd(int fd, const SocketAddr& addr, const char* what);
  static SocketAddr peer_of(const detail::Accepted& a);
};

/// A listening TCP socket.
class SPOOL_API TcpListener {
 public:
  /// Binds `addr` (SO_REUSEADDR set; port 0 picks a free port) and listens with a backlog of
  /// 1024. The socket belongs to the current runtime's driver (the process-wide one outside
  /// every runtime). Throws std::system_error naming the address (EADDRINUSE, EACCES...).
  static TcpListener bind(const SocketAddr& addr);
  /// bind(SocketAddr::parse(addr)).
  static TcpListener bind(std::string_view addr) { return bind(SocketAddr::parse(addr)); }
  /// Takes a listening TCP socket made elsewhere (e.g. passed by systemd): it is made
  /// non-blocking and close-on-exec (which other holders of the same open socket see too).
  /// Throws std::invalid_argument, saying what `fd` is, when it is not a listening TCP
  /// socket of family AF_INET or AF_INET6; `fd` is closed then (unless it was not open).
  static TcpListener from_fd(int fd);
  /// Waits for the next connection: `auto [stream, peer] = co_await listener.accept();`.
  /// Any number of tasks may accept on one listener at once (an accept loop per worker):
  /// each new connection wakes every waiting accept, and one of them takes it.
  AcceptFuture<TcpStream> accept() noexcept { return {source_, "spool::net::TcpListener::accept"}; }
  /// The bound address (with the port the system chose for port 0).
  SocketAddr local_addr() const;

 private:
  friend class TcpSocket;
  explicit TcpListener(detail::IoSource source) noexcept : source_(std::move(source)) {}
  detail::IoSource source_;
};

}  // namespace spool::net
