// The read and write futures of spool's byte streams.
#include "spool/net/stream_ops.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <string>

#include "net/no_sigpipe.hpp"
#include "net/ring_stream.hpp"
#include "spool/coop.hpp"
#include "spool/net/io_error.hpp"

namespace spool::net {

namespace {

struct Span {
  void* data;
  std::size_t len;
  int flags;  // recv's (send_op always sends with MSG_NOSIGNAL)
};

long recv_op(int fd, void* arg) {
  const auto* s = static_cast<Span*>(arg);
  return ::recv(fd, s->data, s->len, s->flags);
}

long send_op(int fd, void* arg) {
  const auto* s = static_cast<Span*>(arg);
  return ::send(fd, s->data, s->len, MSG_NOSIGNAL);  // a closed peer: EPIPE, not SIGPIPE
}

long sendmsg_op(int fd, void* arg) {
  return ::sendmsg(fd, static_cast<msghdr*>(arg), MSG_NOSIGNAL);
}

// A pipe's (or another non-socket fd's) read and writes.
long read_op(int fd, void* arg) {
  const auto* s = static_cast<Span*>(arg);
  return ::read(fd, s->data, s->len);
}

long write_op(int fd, void* arg) {
  const auto* s = static_cast<Span*>(arg);
  detail::NoSigpipe guard;
  const long n = ::write(fd, s->data, s->len);
  if (n < 0) guard.consume_if_raised(errno);
  return n;
}

long writev_op(int fd, void* arg) {
  const auto* msg = static_cast<msghdr*>(arg);
  detail::NoSigpipe guard;
  const long n = ::writev(fd, msg->msg_iov, static_cast<int>(msg->msg_iovlen));
  if (n < 0) guard.consume_if_raised(errno);
  return n;
}

}  // namespace

Poll<std::size_t> ReadFuture::poll(Context& cx) {
  // An empty buffer reads 0 at once: a stream socket's recv of 0 bytes says EAGAIN while
  // nothing is queued, and the read would wait for bytes it cannot take (for ever, if none
  // come). A datagram recv of 0 bytes takes (and drops) a datagram, so it waits for one.
  if (len_ == 0 && mode_ != Mode::kDatagram) [[unlikely]] {
    (void)source_->open_fd();  // closed or moved from: refused, as any read
    return Poll<std::size_t>::ready(0);
  }
  if (!detail::coop_poll_proceed(cx)) return pending;
  // On io_uring, a stream socket's read on the worker's ring (out of line: epoll pays one
  // branch); the readiness path where there is no ring.
  if (source_->ring_streams()) [[unlikely]] {
    if (Poll<std::size_t> r = pending; poll_ring(cx, r)) return r;
  }
  for (;;) {
    const bool peek = mode_ == Mode::kPeek;
    Span s{data_ + done_, len_ - done_, peek ? MSG_PEEK : 0};
    // A short stream read drained the socket; a short datagram or a peek did not.
    const std::size_t drained_below = mode_ == Mode::kDatagram || peek ? 0 : s.len;
    const Poll<long> r =
        source_->poll_io(cx, waiter_, detail::IoSource::Direction::kRead,
                         source_->is_socket() ? recv_op : read_op, &s, drained_below);
    if (r.is_pending()) return pending;
    const long n = r.value();
    if (n < 0) source_->throw_error(static_cast<int>(-n), what_);
    if (mode_ != Mode::kExact) return Poll<std::size_t>::ready(static_cast<std::size_t>(n));
    if (const Poll<std::size_t> r = read_exact_step(static_cast<std::size_t>(n)); r.is_ready()) {
      return r;
    }
  }
}

bool ReadFuture::poll_ring(Context& cx, Poll<std::size_t>& out) {
  // A stream socket's read on the worker's ring, or a dropped one's bytes (a peek takes only
  // those): true with `out` set; false for the readiness path.
  if (mode_ == Mode::kDatagram || !detail::ring_may_serve(ring_, *source_)) return false;
  for (;;) {
    const long n =
        detail::ring_read(ring_, cx, *source_, data_ + done_, len_ - done_, mode_ == Mode::kPeek);
    if (n == detail::kNotOnRing) return false;
    if (n == detail::kRingPending) return true;  // (out: pending)
    if (n < 0) source_->throw_error(static_cast<int>(-n), what_);
    if (mode_ != Mode::kExact) {
      out = Poll<std::size_t>::ready(static_cast<std::size_t>(n));
      return true;
    }
    if (const Poll<std::size_t> r = read_exact_step(static_cast<std::size_t>(n)); r.is_ready()) {
      out = r;
      return true;
    }
  }
}

namespace {

// read_exact's error, out of line so that read_exact_step stays small enough to inline.
[[noreturn, gnu::cold, gnu::noinline]] void throw_short_read(const char* what,
                                                             const detail::IoSource& source,
                                                             std::size_t done, std::size_t len) {
  throw UnexpectedEof(what + source.addresses() + ": the stream ended after " +
                      std::to_string(done) + " of the " + std::to_string(len) +
                      " bytes read_exact wanted");
}

}  // namespace

Poll<std::size_t> ReadFuture::read_exact_step(std::size_t n) {
  done_ += n;
  if (done_ == len_) return Poll<std::size_t>::ready(len_);
  if (n == 0) throw_short_read(what_, *source_, done_, len_);
  return pending;
}

bool WriteFuture::poll_ring(Context& cx, Poll<std::size_t>& out) {
  // True with `out` set; false for the readiness path.
  if (!detail::ring_may_serve(ring_, *source_)) return false;
  for (;;) {
    const long n = detail::ring_write(ring_, cx, *source_, data_ + done_, len_ - done_);
    if (n == detail::kNotOnRing) return false;
    if (n == detail::kRingPending) return true;  // (out: pending)
    if (n < 0) source_->throw_error(static_cast<int>(-n), what_);
    done_ += static_cast<std::size_t>(n);
    if (!all_ || done_ == len_) {
      out = Poll<std::size_t>::ready(done_);
      return true;
    }
  }
}

Poll<std::size_t> WriteFuture::poll(Context& cx) {
  if (!detail::coop_poll_proceed(cx)) return pending;
  // On io_uring, on the worker's ring where there is one (out of line, as ReadFuture's).
  if (source_->ring_streams()) [[unlikely]] {
    if (Poll<std::size_t> r = pending; poll_ring(cx, r)) return r;
  }
  for (;;) {
    Span s{const_cast<std::byte*>(data_ + done_), len_ - done_, 0};
    const Poll<long> r = source_->poll_io(cx, waiter_, detail::IoSource::Direction::kWrite,
                                          source_->is_socket() ? send_op : write_op, &s, s.len);
    if (r.is_pending()) return pending;
    const long n = r.value();
    if (n < 0) source_->throw_error(static_cast<int>(-n), what_);
    done_ += static_cast<std::size_t>(n);
    if (!all_ || done_ == len_) return Poll<std::size_t>::ready(done_);
  }
}

Poll<std::size_t> WriteVectoredFuture::poll(Context& cx) {
  if (!detail::coop_poll_proceed(cx)) return pending;
  // By readiness always, after any send pending on a ring (a dropped write_all's rest).
  if (source_->ring_streams() && detail::ring_send_pending(*source_, cx)) [[unlikely]] {
    return pending;
  }
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(bufs_.data());
  msg.msg_iovlen = std::min<std::size_t>(bufs_.size(), IOV_MAX);
  const Poll<long> r = source_->poll_io(cx, waiter_, detail::IoSource::Direction::kWrite,
                                        source_->is_socket() ? sendmsg_op : writev_op, &msg);
  if (r.is_pending()) return pending;
  if (r.value() < 0) source_->throw_error(static_cast<int>(-r.value()), what_);
  return Poll<std::size_t>::ready(static_cast<std::size_t>(r.value()));
}

}  // namespace spool::net
