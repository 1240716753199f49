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
#include "net/address_name.hpp"
#include "net/ring_stream.hpp"
#include "spool/net/socket_addr.hpp"
#include "spool/time/sleep.hpp"

namespace spool::detail {

std::string address_name(const sockaddr_storage& ss, socklen_t len) {
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

namespace {

// The name of the socket's address that `get` (getsockname, getpeername) gives; "?" when
// the socket has none (now).
std::string name_of(int fd, int (*get)(int, sockaddr*, socklen_t*)) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (get(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return address_name(ss, len);
}

// The readiness bit an operation of `dir` uses.
std::uint32_t readiness_bit(IoSource::Direction dir) noexcept {
  return dir == IoSource::Direction::kRead ? ScheduledIo::kReadable : ScheduledIo::kWritable;
}

}  // namespace

IoSource::IoSource(std::shared_ptr<Driver> driver, int fd, const char* what, IoAdopt how)
    : driver_(std::move(driver)), fd_(fd), socket_(how.socket) {
  ring_streams_ = socket_ && driver_->io().backend() == IoBackend::kIoUring;
  try {
    io_ = driver_->io().add(fd, what, how.refuse_duplicate);
  } catch (...) {
    if (how.close_on_failure) ::close(fd);
    fd_ = -1;
    throw;
  }
}

std::pair<IoSource, IoSource> IoSource::adopt_pair(const std::shared_ptr<Driver>& driver,
                                                   const int (&fds)[2], const char* what,
                                                   IoAdopt how) {
  // A registration that fails closes its own fd; the other one is closed here (before the
  // first exists) or by the first's destructor (after).
  IoSource first = [&] {
    try {
      return IoSource(driver, fds[0], what, how);
    } catch (...) {
      ::close(fds[1]);
      throw;
    }
  }();
  IoSource second(driver, fds[1], what, how);
  return {std::move(first), std::move(second)};
}

IoSource::IoSource(IoSource&& other) noexcept
    : driver_(std::move(other.driver_)),
      io_(std::exchange(other.io_, nullptr)),
      ring_fd_(other.ring_fd_.exchange(nullptr, std::memory_order_relaxed)),
      fd_(std::exchange(other.fd_, -1)),
      socket_(other.socket_),
      ring_streams_(other.ring_streams_),
      peer_len_(std::exchange(other.peer_len_, 0)),
      peer_(other.peer_) {}

IoSource& IoSource::operator=(IoSource&& other) noexcept {
  if (this != &other) {
    shut(nullptr);  // a future still waiting on the old socket polls the new one next
    driver_ = std::move(other.driver_);
    io_ = std::exchange(other.io_, nullptr);
    ring_fd_.store(other.ring_fd_.exchange(nullptr, std::memory_order_relaxed),
                   std::memory_order_relaxed);
    fd_ = std::exchange(other.fd_, -1);
    socket_ = other.socket_;
    ring_streams_ = other.ring_streams_;
    peer_len_ = std::exchange(other.peer_len_, 0);
    peer_ = other.peer_;
  }
  return *this;
}

// A future borrowing a destroyed source is its user's error: none is woken into it.
IoSource::~IoSource() { shut(nullptr); }

namespace {

// Wakes the tasks whose operations waited on a source that close() or release() emptied:
// each finds it closed at its next poll (throw_closed) rather than wait forever.
void wake_all(std::vector<Waker>& woken) noexcept {
  for (Waker& w : woken) std::move(w).wake();
}

}  // namespace

void IoSource::close() noexcept {
  std::vector<Waker> woken;
  shut(&woken);
  wake_all(woken);  // last: a woken task may poll at once, on another thread
}

void IoSource::shut(std::vector<Waker>* woken) noexcept {
  // Unregistered before the close: the number may be reused at once. Operations on a ring
  // that may still name it keep it open until the last ends.
  const auto [fd, ring] = unregister(woken);
  if (ring != nullptr) {
    ring->close_when_done();
  } else if (fd >= 0) {
    ::close(fd);
  }
}

int IoSource::release() noexcept {
  std::vector<Waker> woken;
  const auto [fd, ring] = unregister(&woken);
  if (ring != nullptr) ring->release_when_done();  // the caller's now: never closed here
  wake_all(woken);
  return fd;
}

std::pair<int, RingFd*> IoSource::unregister(std::vector<Waker>* woken) noexcept {
  if (fd_ < 0) return {-1, nullptr};
  driver_->io().remove(io_, woken);
  io_ = nullptr;
  return {std::exchange(fd_, -1), ring_fd_.exchange(nullptr, std::memory_order_acquire)};
}

Poll<IoSource::Readiness> IoSource::poll_ready(Context& cx, IoWaiter& waiter, Direction dir) {
  Poll<Readiness> ready = wait_ready(cx, waiter, dir);
  if (ready.is_ready()) waiter.leave();
  return ready;
}

Poll<IoSource::Readiness> IoSource::wait_ready(Context& cx, IoWaiter& waiter, Direction dir) {
  if (io_ == nullptr) throw_closed();
  const bool read = dir == Direction::kRead;
  Poll<ReadyEvent> ready =
      io_->poll_ready(cx, read ? ScheduledIo::kReadMask : ScheduledIo::kWriteMask, waiter);
  if (ready.is_pending()) {
    // The executor parks in this driver, or something else must drive it.
    if (cx.reactor() != driver_.get() && !cx.install_reactor(driver_)) driver_->ensure_driven();
    return pending;
  }
  const ReadyEvent ev = ready.value();
  if ((ev.bits & (ScheduledIo::kShutdown | ScheduledIo::kFailed)) != 0) waiter.leave();
  if ((ev.bits & ScheduledIo::kShutdown) != 0) {
    throw std::system_error(std::make_error_code(std::errc::operation_canceled),
                            "spool: the runtime this descriptor was registered under has shut "
                            "down, so its I/O driver is gone; keep sockets, pipes and AsyncFds "
                            "within the runtime's lifetime");
  }
  if ((ev.bits & ScheduledIo::kFailed) != 0) {
    throw_error(io_->failure(), "spool: the I/O driver could not go on watching this descriptor");
  }
  const std::uint32_t closed = read ? ScheduledIo::kReadClosed : ScheduledIo::kWriteClosed;
  return Poll<Readiness>::ready(
      Readiness{ev.tick, (ev.bits & closed) != 0, (ev.bits & ScheduledIo::kError) != 0});
}

void IoSource::clear_ready(Readiness seen, Direction dir) noexcept {
  // The error an EPOLLERR announced was taken by the syscall (it returns once): clear its
  // bit too, or every later call would find the fd "ready" and spin.
  if (io_ == nullptr) return;  // released or closed since (a guard kept past its AsyncFd)
  io_->clear_readiness(ReadyEvent{seen.tick, 0}, readiness_bit(dir) | ScheduledIo::kError);
}

Poll<long> IoSource::poll_io(Context& cx, IoWaiter& waiter, Direction dir, Op op, void* arg,
                             std::size_t len) {
  for (;;) {
    Poll<Readiness> ready = wait_ready(cx, waiter, dir);
    if (ready.is_pending()) return pending;
    const long n = op(fd_, arg);
    if (n >= 0) {
      // Edge-triggered: a short transfer drained (or filled) the kernel's buffer, and any
      // later change brings a new edge (which moves the tick, so this clear does nothing).
      // (The error bit stays: a transfer that succeeded consumed no error.)
      if (n > 0 && static_cast<std::size_t>(n) < len) {
        io_->clear_readiness(ReadyEvent{ready.value().tick, 0}, readiness_bit(dir));
      }
      waiter.leave();
      return Poll<long>::ready(n);
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      clear_ready(ready.value(), dir);
    } else if (err != EINTR) {
      waiter.leave();
      return Poll<long>::ready(-err);
    }
  }
}

int IoSource::open_fd() const {
  if (fd_ < 0) throw_closed();
  return fd_;
}

void IoSource::throw_closed() {
  throw std::logic_error(
      "spool::net: an operation on a closed or moved-from socket, pipe end or AsyncFd (after "
      "std::move, into_split, close or release); use the object it was moved to");
}

void IoWaiter::leave_slow(bool cancel) noexcept { io_->leave(*this, cancel); }

std::string IoSource::addresses() const {
  if (fd_ < 0 || !socket_) return {};
  std::string peer = name_of(fd_, ::getpeername);
  if (peer == "?" && peer_len_ != 0) {
    sockaddr_storage ss{};
    std::memcpy(&ss, &peer_, peer_len_);
    peer = address_name(ss, peer_len_);
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
