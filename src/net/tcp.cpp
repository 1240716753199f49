// TcpListener, TcpStream and their futures.
#include "spool/net/tcp.hpp"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>

#include "runtime/current_driver.hpp"
#include "spool/coop.hpp"

namespace spool::net {

namespace {

constexpr int kBacklog = 1024;
constexpr std::chrono::milliseconds kMaxBackoff{1000};

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// A new non-blocking TCP socket for `addr`'s family.
int tcp_socket(const SocketAddr& addr, const std::string& what) {
  const int fd =
      ::socket(addr.is_ipv6() ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno(errno, what + ": socket");
  return fd;
}

SocketAddr address_of(int fd, int (*get)(int, sockaddr*, socklen_t*), const char* what) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (get(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) throw_errno(errno, what);
  return SocketAddr(reinterpret_cast<const sockaddr*>(&ss), len);
}

// Connected yet? 0 when it is; -1 with errno: the connect's error, or EAGAIN while it is
// still in progress (getpeername says ENOTCONN).
long connected_op(int fd, void*) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return -1;
  if (err != 0) {
    errno = err;
    return -1;
  }
  sockaddr_storage ss{};
  socklen_t sslen = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &sslen) != 0) {
    if (errno == ENOTCONN) errno = EAGAIN;
    return -1;
  }
  return 0;
}

struct AcceptArgs {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
};

long accept_op(int fd, void* arg) {
  auto* a = static_cast<AcceptArgs*>(arg);
  a->len = sizeof a->peer;
  return ::accept4(fd, reinterpret_cast<sockaddr*>(&a->peer), &a->len,
                   SOCK_NONBLOCK | SOCK_CLOEXEC);
}

// Out of descriptors or memory: the connection stays in the backlog; try again later.
bool resource_exhausted(int err) noexcept {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

}  // namespace

ConnectFuture TcpStream::connect(SocketAddr addr) {
  return ConnectFuture(detail::current_driver(), addr);
}

Poll<TcpStream> ConnectFuture::poll(Context& cx) {
  if (!source_) {
    const std::string what = "spool::net::TcpStream::connect to " + addr_.to_string();
    const int fd = tcp_socket(addr_, what);
    if (::connect(fd, addr_.data(), addr_.size()) != 0 && errno != EINPROGRESS) {
      const int err = errno;
      ::close(fd);
      throw_errno(err, what);
    }
    // Registered after connect(): an unconnected socket reports a hang-up at once.
    source_ = detail::IoSource(std::move(driver_), fd, "spool::net::TcpStream::connect");
  }
  const Poll<long> r =
      source_.poll_io(cx, detail::IoSource::Direction::kWrite, connected_op, nullptr);
  if (r.is_pending()) return pending;
  if (r.value() < 0) {
    throw_errno(static_cast<int>(-r.value()),
                "spool::net::TcpStream::connect to " + addr_.to_string());
  }
  return Poll<TcpStream>::ready(TcpStream(std::move(source_)));
}

Poll<std::pair<TcpStream, SocketAddr>> AcceptFuture::poll(Context& cx) {
  if (!detail::coop_poll_proceed(cx)) return pending;
  for (;;) {
    if (backoff_) {
      if (backoff_->poll(cx).is_pending()) return pending;
      backoff_.reset();
    }
    AcceptArgs args;
    const Poll<long> r =
        listener_->poll_io(cx, detail::IoSource::Direction::kRead, accept_op, &args);
    if (r.is_pending()) return pending;
    const long fd = r.value();
    if (fd >= 0) {
      next_backoff_ = std::chrono::milliseconds(1);
      SocketAddr peer(reinterpret_cast<const sockaddr*>(&args.peer), args.len);
      TcpStream stream(listener_->adopt(static_cast<int>(fd), "spool::net::TcpListener::accept"));
      return Poll<std::pair<TcpStream, SocketAddr>>::ready(std::move(stream), peer);
    }
    const int err = static_cast<int>(-fd);
    if (err == ECONNABORTED) continue;  // the peer gave up while queued: take the next one
    if (!resource_exhausted(err)) listener_->throw_error(err, "spool::net::TcpListener::accept");
    // The listener stays readable (edge-triggered: no new edge comes), so waiting for
    // readiness would hang and retrying at once would spin: wait on a timer instead.
    listener_->count_accept_backoff();
    backoff_.emplace(listener_->sleep_for(next_backoff_));
    next_backoff_ = std::min(next_backoff_ * 2, kMaxBackoff);
  }
}

TcpListener TcpListener::bind(const SocketAddr& addr) {
  const std::string what = "spool::net::TcpListener::bind to " + addr.to_string();
  const int fd = tcp_socket(addr, what);
  const int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd, addr.data(), addr.size()) != 0 || ::listen(fd, kBacklog) != 0) {
    const int err = errno;
    ::close(fd);
    throw_errno(err, what);
  }
  return TcpListener(
      detail::IoSource(detail::current_driver(), fd, "spool::net::TcpListener::bind"));
}

SocketAddr TcpListener::local_addr() const {
  return address_of(source_.fd(), ::getsockname, "spool::net::TcpListener::local_addr");
}

void TcpStream::shutdown(int how) {
  if (::shutdown(source_.fd(), how) != 0)
    source_.throw_error(errno, "spool::net::TcpStream::shutdown");
}

void TcpStream::set_nodelay(bool on) {
  const int v = on ? 1 : 0;
  if (::setsockopt(source_.fd(), IPPROTO_TCP, TCP_NODELAY, &v, sizeof v) != 0) {
    source_.throw_error(errno, "spool::net::TcpStream::set_nodelay");
  }
}

bool TcpStream::nodelay() const {
  int v = 0;
  socklen_t len = sizeof v;
  if (::getsockopt(source_.fd(), IPPROTO_TCP, TCP_NODELAY, &v, &len) != 0) {
    source_.throw_error(errno, "spool::net::TcpStream::nodelay");
  }
  return v != 0;
}

SocketAddr TcpStream::peer_addr() const {
  return address_of(source_.fd(), ::getpeername, "spool::net::TcpStream::peer_addr");
}

SocketAddr TcpStream::local_addr() const {
  return address_of(source_.fd(), ::getsockname, "spool::net::TcpStream::local_addr");
}

std::pair<TcpStream::ReadHalf, TcpStream::WriteHalf> TcpStream::split() noexcept {
  return {ReadHalf(source_), WriteHalf(source_)};
}

std::pair<TcpStream::OwnedReadHalf, TcpStream::OwnedWriteHalf> TcpStream::into_split() && {
  auto shared = std::make_shared<detail::IoSource>(std::move(source_));
  return {OwnedReadHalf(shared), OwnedWriteHalf(shared)};
}

TcpStream::OwnedWriteHalf::~OwnedWriteHalf() {
  if (source_) ::shutdown(source_->fd(), SHUT_WR);  // a reset socket: nothing to tell the peer
}

}  // namespace spool::net
