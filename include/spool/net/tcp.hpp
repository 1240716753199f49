// spool::net::TcpListener and spool::net::TcpStream: TCP over the runtime's I/O driver.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/io_source.hpp"
#include "spool/net/io_error.hpp"
#include "spool/net/socket_addr.hpp"
#include "spool/net/stream_ops.hpp"
#include "spool/time/sleep.hpp"

namespace spool::net {

class TcpStream;

/// The future of TcpStream::connect: ready with the connected stream. Throws
/// std::system_error naming the address (ECONNREFUSED, ENETUNREACH, ...). The socket is
/// made at the first poll and belongs to the driver of the runtime the future was made
/// under.
class ConnectFuture {
 public:
  /// Ready with the stream once connected.
  Poll<TcpStream> poll(Context& cx);

 private:
  friend class TcpStream;
  ConnectFuture(std::shared_ptr<detail::Driver> driver, SocketAddr addr) noexcept
      : driver_(std::move(driver)), addr_(addr) {}
  std::shared_ptr<detail::Driver> driver_;
  SocketAddr addr_;
  detail::IoSource source_;  // the socket, once connect() said EINPROGRESS
};

/// A connected TCP socket. Reads and writes are futures (stream_ops.hpp); one task may read
/// while another writes (split / into_split give each its half). Errors are
/// std::system_error with the errno and a message naming the operation and the addresses.
/// Writes never raise SIGPIPE. Destroying the stream closes the socket (a pending
/// operation must not outlive it).
class TcpStream : public AsyncRead<TcpStream>, public AsyncWrite<TcpStream> {
 public:
  /// Connects to `addr`: `auto s = co_await TcpStream::connect(addr);`. The socket belongs
  /// to the current runtime's driver (the process-wide one outside every runtime).
  static ConnectFuture connect(SocketAddr addr);

  /// Shuts down reading, writing or both (SHUT_RD, SHUT_WR, SHUT_RDWR): after SHUT_WR the
  /// peer reads the end of the stream.
  void shutdown(int how = SHUT_WR);
  /// Sets TCP_NODELAY (no Nagle delay for small writes).
  void set_nodelay(bool on);
  /// Whether TCP_NODELAY is set.
  bool nodelay() const;
  /// The remote address.
  SocketAddr peer_addr() const;
  /// The local address.
  SocketAddr local_addr() const;

  class ReadHalf;
  class WriteHalf;
  class OwnedReadHalf;
  class OwnedWriteHalf;
  /// Borrowed halves, for two tasks that both live no longer than the stream (a join).
  std::pair<ReadHalf, WriteHalf> split() noexcept;
  /// Owned halves, for two independent tasks: the socket closes when both are gone, and
  /// destroying the write half shuts down the writing side (the peer sees the end).
  std::pair<OwnedReadHalf, OwnedWriteHalf> into_split() &&;

  /// The socket and its registration (for the stream operations).
  detail::IoSource& source() noexcept { return source_; }
  /// Names the operations in error messages.
  static constexpr const char* kReadWhat = "spool::net::TcpStream::read";
  /// Names the operations in error messages.
  static constexpr const char* kWriteWhat = "spool::net::TcpStream::write";

 private:
  friend class ConnectFuture;
  friend class AcceptFuture;
  explicit TcpStream(detail::IoSource source) noexcept : source_(std::move(source)) {}
  detail::IoSource source_;
};

/// The read side of TcpStream::split (borrows the stream).
class TcpStream::ReadHalf : public AsyncRead<ReadHalf> {
 public:
  /// The stream's IoSource.
  detail::IoSource& source() noexcept { return *source_; }
  /// Names the operations in error messages.
  static constexpr const char* kReadWhat = TcpStream::kReadWhat;

 private:
  friend class TcpStream;
  explicit ReadHalf(detail::IoSource& s) noexcept : source_(&s) {}
  detail::IoSource* source_;
};

/// The write side of TcpStream::split (borrows the stream).
class TcpStream::WriteHalf : public AsyncWrite<WriteHalf> {
 public:
  /// The stream's IoSource.
  detail::IoSource& source() noexcept { return *source_; }
  /// Names the operations in error messages.
  static constexpr const char* kWriteWhat = TcpStream::kWriteWhat;

 private:
  friend class TcpStream;
  explicit WriteHalf(detail::IoSource& s) noexcept : source_(&s) {}
  detail::IoSource* source_;
};

/// The read side of TcpStream::into_split (shares the socket).
class TcpStream::OwnedReadHalf : public AsyncRead<OwnedReadHalf> {
 public:
  /// The shared IoSource.
  detail::IoSource& source() noexcept { return *source_; }
  /// Names the operations in error messages.
  static constexpr const char* kReadWhat = TcpStream::kReadWhat;

 private:
  friend class TcpStream;
  explicit OwnedReadHalf(std::shared_ptr<detail::IoSource> s) noexcept : source_(std::move(s)) {}
  std::shared_ptr<detail::IoSource> source_;
};

/// The write side of TcpStream::into_split (shares the socket). Destroying it shuts down
/// the writing side, so the peer reads the end of the stream.
class TcpStream::OwnedWriteHalf : public AsyncWrite<OwnedWriteHalf> {
 public:
  /// Moves the half (the moved-from one shuts nothing down).
  OwnedWriteHalf(OwnedWriteHalf&&) noexcept = default;
  OwnedWriteHalf& operator=(OwnedWriteHalf&&) = delete;
  /// Shuts down the writing side (ignoring a socket already reset).
  ~OwnedWriteHalf();
  /// The shared IoSource.
  detail::IoSource& source() noexcept { return *source_; }
  /// Names the operations in error messages.
  static constexpr const char* kWriteWhat = TcpStream::kWriteWhat;

 private:
  friend class TcpStream;
  explicit OwnedWriteHalf(std::shared_ptr<detail::IoSource> s) noexcept : source_(std::move(s)) {}
  std::shared_ptr<detail::IoSource> source_;
};

/// The future of TcpListener::accept: ready with the next connection and its peer's
/// address. When the process or system is out of file descriptors (EMFILE, ENFILE) or
/// memory, it backs off on a timer (1 ms, doubling up to 1 s; counted in
/// RuntimeMetrics::io_accept_backoffs) and tries again, instead of spinning or failing;
/// the connection waits in the backlog. Other errors are std::system_error. Must not be
/// moved once polled (its back-off timer is registered in place).
class AcceptFuture {
 public:
  /// Accepts on `listener`'s socket.
  explicit AcceptFuture(detail::IoSource& listener) noexcept : listener_(&listener) {}
  /// Ready with the connection once one is accepted.
  Poll<std::pair<TcpStream, SocketAddr>> poll(Context& cx);

 private:
  detail::IoSource* listener_;
  std::optional<Sleep> backoff_;
  std::chrono::milliseconds next_backoff_{1};
};

/// A listening TCP socket.
class TcpListener {
 public:
  /// Binds `addr` (SO_REUSEADDR set; port 0 picks a free port) and listens with a backlog of
  /// 1024. The socket belongs to the current runtime's driver (the process-wide one outside
  /// every runtime). Throws std::system_error naming the address (EADDRINUSE, EACCES...).
  static TcpListener bind(const SocketAddr& addr);
  /// bind(SocketAddr::parse(addr)).
  static TcpListener bind(std::string_view addr) { return bind(SocketAddr::parse(addr)); }
  /// Waits for the next connection: `auto [stream, peer] = co_await listener.accept();`.
  AcceptFuture accept() noexcept { return AcceptFuture(source_); }
  /// The bound address (with the port the system chose for port 0).
  SocketAddr local_addr() const;

 private:
  explicit TcpListener(detail::IoSource source) noexcept : source_(std::move(source)) {}
  detail::IoSource source_;
};

}  // namespace spool::net
