// The parts of connect and accept that every stream socket family shares (TCP, Unix).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/io_source.hpp"
#include "spool/time/sleep.hpp"

namespace spool::detail {

/// A stream connect in progress: the socket is made and connect() called at the first
/// poll; ready with the connected socket. Throws std::system_error whose message is `what`
/// (which names the address) for any failure.
class SPOOL_API Connecting {
 public:
  /// Connects a new SOCK_STREAM socket of `addr`'s family to `addr` (`len` bytes).
  Connecting(std::shared_ptr<Driver> driver, const sockaddr_storage& addr, socklen_t len,
             std::string what) noexcept
      : driver_(std::move(driver)), addr_(addr), len_(len), what_(std::move(what)) {}
  /// Connects `fd` (a non-blocking SOCK_STREAM socket, set up by the caller: TcpSocket),
  /// which it owns from now on (closed if the future is dropped before its first poll).
  Connecting(std::shared_ptr<Driver> driver, int fd, const sockaddr_storage& addr, socklen_t len,
             std::string what) noexcept
      : Connecting(std::move(driver), addr, len, std::move(what)) {
    fd_ = fd;
  }
  /// Takes over `other`'s connect (before its first poll; see ConnectFuture).
  Connecting(Connecting&& other) noexcept
      : driver_(std::move(other.driver_)),
        addr_(other.addr_),
        len_(other.len_),
        what_(std::move(other.what_)),
        source_(std::move(other.source_)),
        fd_(std::exchange(other.fd_, -1)),
        done_(other.done_) {}
  Connecting& operator=(Connecting&&) = delete;
  /// Closes the socket it was given, if its first poll never came.
  ~Connecting();
  /// Ready with the connected socket. Throws std::logic_error when polled again after it
  /// completed or failed.
  Poll<IoSource> poll(Context& cx);

 private:
  std::shared_ptr<Driver> driver_;
  sockaddr_storage addr_;
  socklen_t len_;
  std::string what_;
  IoSource source_;  // the socket, once connect() said EINPROGRESS
  IoWaiter waiter_;
  int fd_ = -1;        // the socket to connect, until the first poll (-1: it makes one)
  bool done_ = false;  // ready or failed: a later poll is a misuse
};

/// A connection accept4 gave: its socket (registered) and the peer's address.
struct Accepted {
  IoSource socket;          ///< the connection, registered with the listener's driver
  sockaddr_storage peer{};  ///< the peer's address
  socklen_t peer_len = 0;   ///< its length
};

/// An accept on a listening socket. Out of descriptors or memory (EMFILE, ENFILE,
/// ENOBUFS, ENOMEM), it backs off on a timer of the listener's driver (1 ms, doubling up to
/// 1 s) and tries again: the listener stays readable, so waiting for readiness would hang
/// and retrying at once would spin. ECONNABORTED is skipped. Other errors throw
/// std::system_error naming `what`. Must not move once polled (the back-off timer).
class SPOOL_API Accepting {
 public:
  /// Accepts on `listener`; `what` names the operation in errors.
  Accepting(IoSource& listener, const char* what) noexcept : listener_(&listener), what_(what) {}
  /// Ready with the next connection.
  Poll<Accepted> poll(Context& cx);

 private:
  IoSource* listener_;
  const char* what_;
  std::optional<Sleep> backoff_;
  std::chrono::milliseconds next_backoff_{1};
  IoWaiter waiter_;
};

}  // namespace spool::detail
