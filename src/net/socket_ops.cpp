// Connecting and Accepting: the connect and accept loops of every stream socket.
#include "spool/detail/socket_ops.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "spool/coop.hpp"

namespace spool::detail {

namespace {

constexpr std::chrono::milliseconds kMaxBackoff{1000};

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

long accept_op(int fd, void* arg) {
  auto* a = static_cast<Accepted*>(arg);
  a->peer_len = sizeof a->peer;
  return ::accept4(fd, reinterpret_cast<sockaddr*>(&a->peer), &a->peer_len,
                   SOCK_NONBLOCK | SOCK_CLOEXEC);
}

// Out of descriptors or memory: the connection stays in the backlog; try again later.
bool resource_exhausted(int err) noexcept {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

}  // namespace

Connecting::~Connecting() {
  if (fd_ >= 0) ::close(fd_);
}

Poll<IoSource> Connecting::poll(Context& cx) {
  if (done_) {
    throw std::logic_error(what_ +
                           ": the connect was polled again after it completed or failed; a "
                           "connect future gives its stream once");
  }
  if (!coop_poll_proceed(cx)) return pending;
  done_ = true;  // until it returns pending below
  if (!source_) {
    const int fd = fd_ >= 0
                       ? std::exchange(fd_, -1)
                       : ::socket(addr_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), what_ + ": socket");
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr_), len_) != 0 &&
        errno != EINPROGRESS) {
      // (A Unix socket whose listener's backlog is full says EAGAIN: an error here too.)
      const int err = errno;
      ::close(fd);
      throw std::system_error(err, std::generic_category(), what_);
    }
    // Registered after connect(): an unconnected socket reports a hang-up at once.
    source_ = IoSource(std::move(driver_), fd, what_.c_str());
  }
  const Poll<long> r =
      source_.poll_io(cx, waiter_, IoSource::Direction::kWrite, connected_op, nullptr);
  if (r.is_pending()) {
    done_ = false;
    return pending;
  }
  if (r.value() < 0) {
    throw std::system_error(static_cast<int>(-r.value()), std::generic_category(), what_);
  }
  source_.remember_peer(addr_, len_);
  return Poll<IoSource>::ready(std::move(source_));
}

Poll<Accepted> Accepting::poll(Context& cx) {
  if (!coop_poll_proceed(cx)) return pending;
  for (;;) {
    if (backoff_) {
      if (backoff_->poll(cx).is_pending()) return pending;
      backoff_.reset();
    }
    Accepted a;
    const Poll<long> r = listener_->poll_io(cx, waiter_, IoSource::Direction::kRead, accept_op, &a);
    if (r.is_pending()) return pending;
    const long fd = r.value();
    if (fd >= 0) {
      next_backoff_ = std::chrono::milliseconds(1);
      a.socket = listener_->adopt(static_cast<int>(fd), what_);
      a.socket.remember_peer(a.peer, a.peer_len);
      return Poll<Accepted>::ready(std::move(a));
    }
    const int err = static_cast<int>(-fd);
    if (err == ECONNABORTED) continue;  // the peer gave up while queued: take the next one
    if (!resource_exhausted(err)) listener_->throw_error(err, what_);
    listener_->count_accept_backoff();
    backoff_.emplace(listener_->sleep_for(next_backoff_));
    next_backoff_ = std::min(next_backoff_ * 2, kMaxBackoff);
  }
}

}  // namespace spool::detail
