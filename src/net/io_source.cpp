// IoSource: a socket's fd and its registration with the I/O driver.
#include "spool/detail/io_source.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "driver/driver.hpp"
#include "spool/net/socket_addr.hpp"
#include "spool/time/sleep.hpp"

namespace spool::detail {

namespace {

// "127.0.0.1:80", a Unix path, or "?" when it is neither.
std::string name_of(const sockaddr_storage& ss, socklen_t len) {
  if (ss.ss_family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&ss);
    const std::size_t n =
        len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
    if (n == 0 || un->sun_path[0] == '\0') return "unnamed";
    return std::string(un->sun_path, ::strnlen(un->sun_path, n));
  }
  if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) return "?";
  return net::SocketAddr(reinterpret_cast<const sockaddr*>(&ss), len).to_string();
}

// The name of the socket's address that `get` (getsockname, getpeername) gives; "?" when
// the socket has none (now).
std::string name_of(int fd, int (*get)(int, sockaddr*, socklen_t*)) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (get(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return name_of(ss, len);
}

}  // namespace

IoSource::IoSource(std::shared_ptr<Driver> driver, int fd, const char* what)
    : driver_(std::move(driver)), fd_(fd) {
  try {
    io_ = driver_->io().add(fd, what);
  } catch (...) {
    ::close(fd);
    fd_ = -1;
    throw;
  }
}

IoSource::IoSource(IoSource&& other) noexcept
    : driver_(std::move(other.driver_)),
      io_(std::exchange(other.io_, nullptr)),
      fd_(std::exchange(other.fd_, -1)),
      peer_len_(std::exchange(other.peer_len_, 0)),
      peer_(other.peer_) {}

IoSource& IoSource::operator=(IoSource&& other) noexcept {
  if (this != &other) {
    close();
    driver_ = std::move(other.driver_);
    io_ = std::exchange(other.io_, nullptr);
    fd_ = std::exchange(other.fd_, -1);
    peer_len_ = std::exchange(other.peer_len_, 0);
    peer_ = other.peer_;
  }
  return *this;
}

IoSource::~IoSource() { close(); }

void IoSource::close() noexcept {
  if (fd_ < 0) return;
  driver_->io().remove(io_);  // before the close: the fd number may be reused at once
  ::close(fd_);
  fd_ = -1;
  io_ = nullptr;
}

Poll<long> IoSource::poll_io(Context& cx, IoWaiter& waiter, Direction dir, Op op, void* arg,
                             std::size_t len) {
  if (io_ == nullptr) throw_closed();
  const bool read = dir == Direction::kRead;
  const std::uint32_t mask = read ? ScheduledIo::kReadMask : ScheduledIo::kWriteMask;
  const std::uint32_t used = read ? ScheduledIo::kReadable : ScheduledIo::kWritable;
  for (;;) {
    Poll<ReadyEvent> ready = io_->poll_ready(cx, mask, waiter);
    if (ready.is_pending()) {
      // The executor parks in this driver, or something else must drive it.
      if (cx.reactor() != driver_.get() && !cx.install_reactor(driver_)) driver_->ensure_driven();
      return pending;
    }
    const ReadyEvent ev = ready.value();
    if ((ev.bits & (ScheduledIo::kShutdown | ScheduledIo::kFailed)) != 0) waiter.leave();
    if ((ev.bits & ScheduledIo::kShutdown) != 0) {
      throw std::system_error(std::make_error_code(std::errc::operation_canceled),
                              "spool::net: the runtime this socket was opened under has shut "
                              "down, so its I/O driver is gone; keep sockets within the "
                              "runtime's lifetime");
    }
    if ((ev.bits & ScheduledIo::kFailed) != 0) {
      throw_error(io_->failure(),
                  "spool::net: the I/O driver could not go on watching this socket");
    }
    const long n = op(fd_, arg);
    if (n >= 0) {
      // Edge-triggered: a short transfer drained (or filled) the kernel's buffer, and any
      // later change brings a new edge (which moves the tick, so this clear does nothing).
      if (n > 0 && static_cast<std::size_t>(n) < len) io_->clear_readiness(ev, used);
      waiter.leave();
      return Poll<long>::ready(n);
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      // The error an EPOLLERR announced was taken by an earlier call (it returns once):
      // clear its bit too, or every later call would find the socket "ready" and spin.
      io_->clear_readiness(ev, used | ScheduledIo::kError);
    } else if (err != EINTR) {
      waiter.leave();
      return Poll<long>::ready(-err);
    }
  }
}

void IoSource::throw_closed() {
  throw std::logic_error(
      "spool::net: an operation on a closed or moved-from socket (after std::move, "
      "into_split or close); use the object the socket was moved to");
}

void IoWaiter::leave_slow(bool cancel) noexcept { io_->leave(*this, cancel); }

std::string IoSource::addresses() const {
  if (fd_ < 0) return {};
  std::string peer = name_of(fd_, ::getpeername);
  if (peer == "?" && peer_len_ != 0) {
    sockaddr_storage ss{};
    std::memcpy(&ss, &peer_, peer_len_);
    peer = name_of(ss, peer_len_);
  }
  return " (local " + name_of(fd_, ::getsockname) + ", peer " + peer + ")";
}

void IoSource::throw_error(int err, const char* what) const {
  throw std::system_error(err, std::generic_category(), what + addresses());
}

void IoSource::remember_peer(const sockaddr_storage& addr, socklen_t len) noexcept {
  if ((addr.ss_family != AF_INET && addr.ss_family != AF_INET6) || len > sizeof peer_) return;
  std::memcpy(&peer_, &addr, len);
  peer_len_ = len;
}

void IoSource::count_accept_backoff() const noexcept { driver_->io().count_accept_backoff(); }

Sleep IoSource::sleep_for(std::chrono::nanoseconds d) const {
  const Instant now = driver_->time().clock().now();
  return Sleep(driver_, now + d, d <= std::chrono::nanoseconds::zero());
}

}  // namespace spool::detail
