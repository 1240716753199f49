// spool::net::UnixListener and spool::net::UnixStream: stream sockets on filesystem paths.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "spool/detail/io_source.hpp"
#include "spool/net/connect_accept.hpp"
#include "spool/net/halves.hpp"
#include "spool/net/stream_ops.hpp"
#include "spool/net/stream_socket.hpp"

namespace spool::net {

/// A connected Unix-domain stream socket: the read and write operations of TcpStream
/// (stream_ops.hpp), shutdown, and halves. Errors are std::system_error naming the
/// operation and the path.
class SPOOL_API UnixStream : public StreamSocket<UnixStream> {
 public:
  /// The peer address type an accept gives: the peer's path ("" when it is unnamed, as a
  /// connecting socket usually is).
  using Peer = std::string;
  /// Connects to the listener bound at `path`: `auto s = co_await UnixStream::connect(p);`.
  /// Throws std::invalid_argument for a path longer than sun_path holds.
  static ConnectFuture<UnixStream> connect(std::string_view path);
  /// A connected pair (socketpair), both registered with the current runtime's driver.
  static std::pair<UnixStream, UnixStream> pair();
  /// Takes a connected Unix stream socket made elsewhere (inherited, or half of a
  /// socketpair): it is made non-blocking and close-on-exec (which other holders of the same
  /// open socket see too). Throws std::invalid_argument, saying what `fd` is, when it is not
  /// a connected SOCK_STREAM socket of family AF_UNIX; `fd` is closed then (unless it was
  /// not open).
  static UnixStream from_fd(int fd);

  /// Shuts down reading, writing or both (SHUT_RD, SHUT_WR, SHUT_RDWR).
  void shutdown(int how = SHUT_WR);
  /// The path of the peer ("" when unnamed).
  std::string peer_path() const;

  /// Names the operations in error messages.
  static constexpr const char* kReadWhat = "spool::net::UnixStream::read";
  /// Names the operations in error messages.
  static constexpr const char* kPeekWhat = "spool::net::UnixStream::peek";
  /// Names the operations in error messages.
  static constexpr const char* kWriteWhat = "spool::net::UnixStream::write";

 private:
  friend class ConnectFuture<UnixStream>;
  friend class AcceptFuture<UnixStream>;
  explicit UnixStream(detail::IoSource source) noexcept : StreamSocket(std::move(source)) {}
  static std::string peer_of(const detail::Accepted& a);
};

/// A listening Unix-domain stream socket bound to a path. It does not remove the path when
/// it closes (as a TCP port, a path is the program's to manage): bind fails with
/// EADDRINUSE while a file is there.
class SPOOL_API UnixListener {
 public:
  /// Binds `path` and listens (backlog 1024). Throws std::system_error naming the path
  /// (EADDRINUSE, EACCES, ENOENT...), std::invalid_argument for a path empty, too long or
  /// holding a NUL byte (abstract addresses are not supported).
  static UnixListener bind(std::string_view path);
  /// Takes a listening Unix stream socket made elsewhere (e.g. passed by systemd): it is made
  /// non-blocking and close-on-exec. Throws std::invalid_argument, saying what `fd` is, when
  /// it is not a listening SOCK_STREAM socket of family AF_UNIX; `fd` is closed then (unless
  /// it was not open).
  static UnixListener from_fd(int fd);
  /// Waits for the next connection: `auto [stream, peer_path] = co_await l.accept();`.
  /// Any number of tasks may accept on one listener at once (an accept loop per worker):
  /// each new connection wakes every waiting accept, and one of them takes it.
  AcceptFuture<UnixStream> accept() noexcept {
    return {source_, "spool::net::UnixListener::accept"};
  }
  /// The bound path.
  const std::string& path() const noexcept { return path_; }

 private:
  UnixListener(detail::IoSource source, std::string path) noexcept
      : source_(std::move(source)), path_(std::move(path)) {}
  detail::IoSource source_;
  std::string path_;
};

}  // namespace spool::net
